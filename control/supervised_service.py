"""A local mesh service run under its own supervisor (:mod:`control.supervisor`).

Every long-running service of the local mesh (each detector replica, the ingest job, the metrics
aggregator) is started as ``python -m control.supervisor -- <service command>`` in a
:class:`LocalProcess`: the pid file names the supervisor, which restarts the service with backoff
when it dies and keeps ``supervisor.json`` next to the pid file. A service that crashed is then
running again within seconds instead of staying down until someone notices, and ``mesh status``
reads from the state file which child runs now, how often it was restarted and why it last died.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from shared.json_files import read_json
from shared.local_process import LocalProcess, ProcessInfo


def supervisor_file(process: LocalProcess) -> Path:
    """Where the supervisor of ``process`` keeps its state."""
    return process.dir / "supervisor.json"


def start_supervised(
    process: LocalProcess,
    command: Sequence[str],
    env: Mapping[str, str],
    child_status: Path | None = None,
) -> tuple[ProcessInfo, bool]:
    """Start ``command`` under a supervisor as ``process`` (a no-op when it already runs).

    ``child_status`` is a JSON file in which the service writes its ``last_error``; the
    supervisor then reports that as the reason of a crash."""
    if process.running() is None:  # a fresh start must not show the last run's state
        supervisor_file(process).unlink(missing_ok=True)
    wrapped = [sys.executable, "-m", "control.supervisor", "--state", str(supervisor_file(process))]
    if child_status is not None:
        wrapped += ["--child-status", str(child_status)]
    return process.start([*wrapped, "--", *command], env)


@dataclass(frozen=True)
class SupervisedChild:
    """What the supervisor of a running service says about the service process."""

    #: "running", "backoff" (waiting to restart after a crash) or "stopped"; None before the
    #: supervisor wrote its first state.
    state: str | None
    #: The service process now (None while in backoff).
    pid: int | None
    started: float | None
    restarts: int
    #: How the last run ended ("exit code 1", "killed by SIGKILL: <its last error>"), if any.
    last_exit: str | None


def supervised_child(process: LocalProcess) -> SupervisedChild | None:
    """The service behind a running supervised ``process``; None when it does not run."""
    if process.running() is None:
        return None
    state = read_json(supervisor_file(process)) or {}
    return SupervisedChild(
        state=state.get("state"),
        pid=state.get("child_pid"),
        started=state.get("child_started"),
        restarts=int(state.get("restarts", 0)),
        last_exit=state.get("last_exit"),
    )
