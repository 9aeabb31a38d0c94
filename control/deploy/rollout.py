"""``mesh rollout NAME``: replace a detector's replicas with a new version, one at a time.

Surge, then retire: for each replica a new-version instance joins the *same* consumer group next to
the old ones, must start and stay healthy for ``health_s`` seconds (alive, no restart, failed
share under ``max_error_rate``), and only then is one old instance stopped. Stopping is SIGTERM:
the old instance finishes and commits its batch before it leaves, so the partitions it hands over
resume exactly at the next unprocessed record (cooperative rebalancing: only the moved partitions
pause). Nothing is lost; a record is processed twice only if an old instance had to be killed
mid-batch, or a batch's commit could not be made before its partition moved: at most one batch
each, and the report counts them from every replica's own status.

A new version that fails is stopped, every old replica already retired is started again, and the
deployment keeps its current release: the old version never stopped serving the other partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from control.deploy.backends import Replica, preflight, replica
from control.deploy.errors import DeployRefused, UnhealthyRelease
from control.deploy.health import (
    DEFAULT_HEALTH_S,
    DEFAULT_MAX_ERROR_RATE,
    wait_started,
    watch,
)
from control.deploy.lifecycle import Say, check_inputs_exist
from control.deploy.registry import RUNNING, Deployment, Registry
from control.deploy.releases import Release, folder_digest
from control.deploy.validate import Validated, validate
from shared.settings import Settings


@dataclass(frozen=True)
class RolloutReport:
    deployment: Deployment
    replaced: int
    #: old instances that did not stop cleanly (killed mid-batch: one batch may repeat each)
    killed: tuple[str, ...]
    #: partitions handed over with a processed but uncommitted batch, over every replica involved
    uncommitted_batches: int

    @property
    def duplicates(self) -> str:
        """What may have been processed twice, in words, with its bound."""
        batches = len(self.killed) + self.uncommitted_batches
        if not batches:
            return "every handover was committed: no record processed twice"
        killed = f" ({', '.join(self.killed)} killed mid-batch)" if self.killed else ""
        return f"at most {batches} batch(es) processed twice{killed}"


def rollout(
    settings: Settings,
    name: str,
    source: Path | None = None,
    health_s: float = DEFAULT_HEALTH_S,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    say: Say = print,
) -> RolloutReport:
    registry = Registry(settings.home)
    current = registry.get(name)
    if current is None:
        raise DeployRefused(f"no detector deployed as {name!r}: `mesh deploy FOLDER` first")
    if current.desired != RUNNING:
        raise DeployRefused(f"{name} is stopped: `mesh deploy {current.source}` to run it")
    folder = (source or Path(current.source)).resolve()
    validated = new_version(settings, current, folder, "roll out", say)
    with registry.changing(name):
        release = registry.new_release(name, folder, validated.version)
        old = [replica(settings, current.backend, name, current.current.seq, i)
               for i in range(current.replicas)]  # fmt: skip
        # A count set with `mesh scale` is the operator's and stays; else the manifest says.
        count = current.replicas if current.scaled else validated.replicas
        new = [replica(settings, current.backend, name, release.seq, i) for i in range(count)]
        try:
            killed = _replace(old, new, release, current, health_s, max_error_rate, say)
        except _Unhealthy as unhealthy:
            registry.save(
                current.with_event(f"rollout of v{release.version} rolled back: {unhealthy}")
            )
            raise UnhealthyRelease(
                f"{name} v{release.version} failed its health check ({unhealthy}); "
                f"rolled back, v{current.current.version} keeps running"
            ) from None
        uncommitted = sum(int(i.view().report.get("uncommitted_batches", 0)) for i in old + new)
        deployment = current.with_event(
            f"rolled out v{validated.version} (from v{current.current.version})",
            source=str(folder),
            current=release,
            previous=current.current,
            replicas=count,
        )
        registry.save(deployment)
        return RolloutReport(deployment, len(new), tuple(killed), uncommitted)


def new_version(
    settings: Settings, current: Deployment, folder: Path, verb: str, say: Say
) -> Validated:
    """``folder`` checked as a new version of the deployed ``current`` (by a rollout or a
    shadow): it validates, declares the same detector, differs from what runs, and its inputs
    and backend are there; DeployRefused with the first problem."""
    name = current.name
    validated = validate(folder)
    if validated.name != name:
        raise DeployRefused(f"{folder} declares detector {validated.name!r}, not {name!r}")
    if folder_digest(folder) == current.current.digest:
        raise DeployRefused(
            f"nothing to {verb}: {folder} is what {name} v{current.current.version} runs"
        )
    check_inputs_exist(settings, validated)
    preflight(settings, current.backend)
    say(f"checked {name} v{validated.version}: dry run of {validated.dry_run_records} records")
    return validated


class _Unhealthy(Exception):
    """A new replica failed its health check; everything was rolled back."""


def _replace(
    old: list[Replica],
    new: list[Replica],
    release: Release,
    current: Deployment,
    health_s: float,
    max_error_rate: float,
    say: Say,
) -> list[str]:
    """Start new replica i, watch it, stop old replica i; on a failure roll everything back and
    raise _Unhealthy with the reason. Returns the old replicas that did not stop cleanly."""
    started: list[Replica] = []
    retired: list[Replica] = []
    killed: list[str] = []
    for i in range(max(len(old), len(new))):
        if i < len(new):
            instance = new[i]
            info, _ = instance.start(release)
            started.append(instance)
            say(f"started {instance.name} v{release.version} pid {info.pid}; watching it")
            reason = wait_started([instance], max_error_rate) or watch(
                started, health_s, max_error_rate
            )
            if reason:
                _roll_back(started, retired, current, say)
                raise _Unhealthy(reason)
        if i < len(old) and old[i].running():
            old[i].stop()
            retired.append(old[i])
            if old[i].view().report.get("state") != "stopped":
                killed.append(old[i].name)
            say(f"stopped {old[i].name} v{current.current.version}")
    return killed


def _roll_back(
    started: list[Replica], retired: list[Replica], current: Deployment, say: Say
) -> None:
    """Old replicas first (so their partitions are served), then the new ones go."""
    for instance in retired:
        info, _ = instance.start(current.current)
        say(f"rollback: restarted {instance.name} pid {info.pid}")
    for instance in started:
        instance.stop()
        say(f"rollback: stopped {instance.name}")
