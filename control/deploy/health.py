"""Is a new instance healthy? Started, alive, not restarted, and not failing its records.

A deploy waits for its replicas to start; a rollout also watches each new replica for a while
before it stops an old one. Unhealthy means: its process died (the supervisor counts a restart or
waits in backoff), the runtime reported ``failed`` (the error-rate policy stops it with exit 3),
or the share of failed records passed ``max_error_rate``. The reason names the replica and says
what happened, with the runtime's own last error when there is one.
"""

from __future__ import annotations

import time

from control.deploy.backends import Replica
from control.deploy.instances import InstanceView

#: Share of failed records above which a new replica counts as unhealthy.
DEFAULT_MAX_ERROR_RATE = 0.2
#: Seconds each new replica of a rollout must stay healthy before an old one is stopped.
DEFAULT_HEALTH_S = 10.0
#: Seconds a new replica gets to load, join its group and report that it runs.
START_TIMEOUT_S = 90.0
#: Records a replica must have processed before its error rate is judged (one failure among the
#: first three records is not a 33 % error rate worth a rollback).
MIN_RECORDS_FOR_RATE = 50


def problem(view: InstanceView, max_error_rate: float) -> str | None:
    """Why this replica is unhealthy now, or None."""
    if view.restarts or view.supervisor == "backoff":
        return f"{view.process} died: {view.last_error or 'no error recorded'}"
    if view.supervisor is None or view.supervisor == "stopped":
        return f"{view.process} is not running: {view.last_error or 'it exited'}"
    if view.report.get("state") == "failed":
        return f"{view.process} failed: {view.report.get('last_error')}"
    rate = float(view.report.get("error_rate", 0.0))
    if int(view.report.get("records", 0)) >= MIN_RECORDS_FOR_RATE and rate > max_error_rate:
        return f"{view.process} fails {rate:.0%} of its records (limit {max_error_rate:.0%})"
    return None


def wait_started(
    instances: list[Replica], max_error_rate: float, timeout: float = START_TIMEOUT_S
) -> str | None:
    """Wait until every replica reports ``running``; the first problem, or None when all run."""
    deadline = time.monotonic() + timeout
    pending = list(instances)
    while pending:
        for instance in list(pending):
            view = instance.view()
            # No supervisor state yet: it is still starting (a dead one shows as a timeout).
            reason = problem(view, max_error_rate) if view.supervisor is not None else None
            if reason:
                return reason
            if view.report.get("state") == "running":
                pending.remove(instance)
        if pending and time.monotonic() > deadline:
            names = ", ".join(i.name for i in pending)
            return f"{names} did not report running within {timeout:.0f} s (see `mesh logs`)"
        if pending:
            time.sleep(0.25)
    return None


def watch(instances: list[Replica], seconds: float, max_error_rate: float) -> str | None:
    """Watch running replicas for ``seconds``; the first problem seen, or None."""
    deadline = time.monotonic() + seconds
    while True:
        for instance in instances:
            reason = problem(instance.view(), max_error_rate)
            if reason:
                return reason
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.25)
