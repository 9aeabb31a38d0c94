"""Cases 1 and 2: detector instances killed with SIGKILL under steady load.

Two instances of the echo detector (one alert per record) share a private mesh's
``records.transactions`` in one group, fed by the smoke driver. **detector_kill**: one instance
is killed mid-run and stays dead; the survivor takes its partitions once the group notices (a
6 s session timeout). **detector_kill_cycles**: three times, one instance (alternating) is killed
and started again while the other runs.

Guarantees checked: no acknowledged record lost; no reordering within a key; committed offsets
never go backwards; duplicates at most one uncommitted batch (BATCH records) per kill, which is
what the runtime's commit-per-batch can replay. Recovery: from a kill until every record the
broker had acknowledged at that moment is alerted.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from chaos.offsets import OffsetWatch
from chaos.report import CaseResult
from chaos.smoke import SmokeDriver, check
from chaos.tap import AlertTap
from shared.settings import Settings
from shared.topic_names import TopicNames
from testkit.detector_runs import DetectorProcess

ECHO = Path(__file__).parent / "echo"
#: Records per batch of each instance, so the most one kill can replay.
BATCH = 500


@dataclass(frozen=True)
class Load:
    """How long and how fast a case feeds, and when its faults come (shares of the run)."""

    seconds: float
    rate: float

    @classmethod
    def of(cls, short: bool) -> Load:
        return cls(15.0, 800.0) if short else cls(60.0, 2000.0)


def detector_kill(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _run(settings, work, Load.of(short), cycles=1, restart=False, name="detector_kill")


def detector_kill_cycles(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _run(settings, work, Load.of(short), cycles=3, restart=True,
                name="detector_kill_cycles")  # fmt: skip


def _run(
    settings: Settings, work: Path, load: Load, *, cycles: int, restart: bool, name: str
) -> CaseResult:
    from control.cli.topics import apply_declared

    prefix = f"chaos-{uuid.uuid4().hex[:8]}."
    mesh = replace(settings, home=work / "home", topic_prefix=prefix)
    names = TopicNames.of(mesh)
    with contextlib.redirect_stdout(io.StringIO()):  # one line per topic: not the case's
        apply_declared(mesh)
    run = uuid.uuid4().hex[:8]
    source, group = names.records("transactions"), names.detector_group("echo")
    tap = AlertTap(mesh, names.alerts).start()
    watch = OffsetWatch(mesh.bootstrap_servers, group, [source]).start()
    instances = [_instance(mesh, prefix, work, "a", 0), _instance(mesh, prefix, work, "b", 0)]
    driver = SmokeDriver(mesh, source, run, load.rate)
    notes, recoveries, mid_run = [], [], True
    try:
        for instance in instances:
            instance.wait_for_log(f"assigned {source}[", 60)
        driver.start()
        started = time.monotonic()
        for cycle in range(cycles):
            # Faults spread over the middle of the run: 25 %, 45 %, 65 % of it.
            fault_at = started + load.seconds * (0.25 + 0.2 * cycle)
            time.sleep(max(fault_at - time.monotonic(), 0))
            victim = cycle % 2
            before = set(driver.acknowledged)
            mid_run &= bool(tap.seen) and driver.running
            instances[victim].kill()
            killed_at = time.monotonic()
            at = killed_at - started
            notes.append(f"kill {cycle + 1}: instance {'ab'[victim]} SIGKILLed at {at:.1f} s, "
                         f"{len(before)} records acknowledged")  # fmt: skip
            if restart:
                instances[victim] = _instance(mesh, prefix, work, "ab"[victim], cycle + 1)
            recoveries.append(_recovered(tap, before, killed_at))
        time.sleep(max(started + load.seconds - time.monotonic(), 0))
        sent_before_stop = driver.sent
        driver.stop()
        mid_run &= driver.sent >= sent_before_stop > 0
        _wait_all(tap, set(driver.acknowledged), 180)
        time.sleep(3)  # any duplicate still on its way
    finally:
        driver.stop()
        for instance in instances:
            _stop(instance)
        watch.stop()
        tap.stop()
    figures = check(driver, tap.in_partition_order())
    known = [r for r in recoveries if r is not None]
    notes.append(f"offsets sampled {watch.samples} times; steps back: {watch.regressions[:3]}")
    return CaseResult(name, figures, max(known) if known else None, mid_run, BATCH * cycles,
                      len(watch.regressions), notes)  # fmt: skip


def _instance(mesh: Settings, prefix: str, work: Path, label: str, start: int) -> DetectorProcess:
    args = [
        "--topic-prefix", prefix, "--batch-size", str(BATCH), "--log-interval", "1",
        "--instance-id", f"echo-{label}{start}",
        "--consumer-config", "session.timeout.ms=6000",
        "--consumer-config", "heartbeat.interval.ms=1000",
    ]  # fmt: skip
    return DetectorProcess(mesh, ECHO, args, work / f"echo-{label}{start}.log",
                           env={"MESH_HOME": str(mesh.home)})  # fmt: skip


def _recovered(
    tap: AlertTap, before: set[str], killed_at: float, timeout_s: float = 120.0
) -> float | None:
    deadline = killed_at + timeout_s
    while time.monotonic() < deadline:
        if tap.has_all(before):
            return time.monotonic() - killed_at
        time.sleep(0.1)
    return None


def _wait_all(tap: AlertTap, ids: set[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not tap.has_all(ids) and time.monotonic() < deadline:
        time.sleep(0.2)


def _stop(instance: DetectorProcess) -> None:
    """SIGTERM (a killed instance is gone already); one that does not stop in 30 s is killed."""
    if instance.process.poll() is not None:
        return
    try:
        instance.terminate(30)
    except subprocess.TimeoutExpired:
        instance.process.kill()
        instance.process.wait(10)
