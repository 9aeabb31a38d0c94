"""Cases 10 and 11: the metrics aggregator's totals survive compaction, a rebuild and a kill at
its worst moment.

Both run two echo instances under the smoke load, each reporting its metrics every second to the
case's compacted ``metrics`` topic, and the aggregator as the real supervised service writing to
a private InfluxDB; a second aggregator then rebuilds from scratch (a fresh MESH_HOME, so a fresh
checkpoint) into another database, and the two sets of totals must be the same
(:mod:`chaos.aggregator_run`).

* 10 ``metrics_compacted``: the ``metrics`` topic rolls a segment every 2 s and the broker's
  cleaner compacts it as it goes (it keeps the latest snapshot of every instance and metric).
  The case waits until compaction really removed snapshots, then rebuilds from what is left.
* 11 ``aggregator_kill``: the aggregator writes to InfluxDB through a gate
  (:mod:`chaos.influx_gate`) that SIGKILLs it (driver and Spark JVM) right after InfluxDB took a
  batch's points and before the batch could commit. Its supervisor restarts it (once); it
  replays the batch, which must write the very same points (no double counting: the state comes
  from the checkpoint of the batch before). A rebuild from scratch at the end must give the same
  totals, as in case 10 but on the topic as it is.

Only case 11 is in the short form (`make test`): its rebuild checks case 10's totals too, on an
uncompacted topic; the compaction itself waits for the broker's cleaner and is left to `make
chaos`. (Not both in one case: a replay reads its batch's offsets again, and records the cleaner
removed meanwhile are not there to be read, so the replay rightly writes fewer points.)

The detector figures (sent, seen, lost ...) are the echo alerts' as in every case; the
aggregator's checks are the case's own.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from chaos import aggregator_run as agg
from chaos.case_mesh import CaseMesh
from chaos.case_run import CaseRun, Load
from chaos.influx_gate import InfluxGate
from chaos.report import CaseResult
from control.launch.aggregator import aggregator_process
from shared.kafka.config import admin_config
from shared.settings import Settings
from testkit.service_kill import kill_service

#: The metrics topic rolls a segment this often in case 10, so the cleaner has work while it runs.
SEGMENT_MS = 2000


def aggregator_kill(settings: Settings, work: Path, short: bool) -> CaseResult:
    load = Load.of(short)
    influx = agg.private_influx(work)
    url = influx.running_url() or ""
    gate = InfluxGate(url).start()
    mesh = CaseMesh.create(settings, work)
    first = agg.aggregator_settings(mesh.settings, work / "aggregator", gate.url, "replayed")
    rebuilt = agg.aggregator_settings(mesh.settings, work / "rebuild", url, "rebuilt")
    failures: list[str] = []
    recover_s = None
    try:
        with CaseRun(mesh, load) as run:
            for label in ("a", "b"):
                run.instance(label, env=agg.REPORTING)
            agg.start(first)
            _wait_first_write(gate, 120)  # the aggregator runs: the load and its clock start
            run.start_load()
            run.sleep_until(0.4)
            gate.arm(lambda: kill_service(aggregator_process(first)))
            if not gate.killed.wait(load.seconds):
                failures.append("no write reached InfluxDB after the gate was armed")
            mid_run = gate.killed.is_set() and run.driver.running and run.output_so_far()
            sending = run.finish()
            failures += run.exited()
        recovered = _first_write_after(gate, 120)
        if gate.log.killed_at is not None and recovered is not None:
            recover_s = recovered - gate.log.killed_at
        agg.wait_caught_up(first)
        restarted = agg.supervised_restart_reason(first)
        if restarted != "killed by SIGKILL":
            failures.append(
                f"the aggregator's supervisor says {restarted!r}, not a SIGKILL restart"
            )
        replayed = _replayed(gate)
        if replayed:
            failures.append(f"{len(replayed)} points of the killed write were not written again "
                            f"identically, e.g. {replayed[0][:160]}")  # fmt: skip
        after_kill, from_scratch, _ = agg.rebuild(first, rebuilt, failures)
    finally:
        agg.stop(first)
        agg.stop(rebuilt)
        gate.stop()
        influx.stop()
    killed = gate.log.killed_write or []
    run.notes.append(f"aggregator killed after InfluxDB took a write of {len(killed)} points; "
                     f"{len(after_kill)} series totals, equal to a rebuild from scratch: "
                     f"{not agg.differences(after_kill, from_scratch)}")  # fmt: skip
    return run.result("aggregator_kill", recover_s=recover_s, mid_run=mid_run and sending,
                      duplicates_allowed=0, failures=failures)  # fmt: skip


def metrics_compacted(settings: Settings, work: Path, short: bool) -> CaseResult:
    load = Load.of(short)
    influx = agg.private_influx(work)
    url = influx.running_url() or ""
    mesh = CaseMesh.create(settings, work)
    _compact_quickly(mesh.settings, mesh.names.metrics)
    first = agg.aggregator_settings(mesh.settings, work / "aggregator", url, "first")
    rebuilt = agg.aggregator_settings(mesh.settings, work / "rebuild", url, "rebuilt")
    failures: list[str] = []
    try:
        with CaseRun(mesh, load) as run:
            for label in ("a", "b"):
                run.instance(label, env=agg.REPORTING)
            agg.start(first)
            run.start_load()
            sending = run.finish()
            failures += run.exited()
        agg.wait_caught_up(first)
        removed, kept = _wait_compacted(mesh.settings, mesh.names.metrics, 120)
        if not removed:
            failures.append("the broker's cleaner never compacted the metrics topic")
        before, after, recover_s = agg.rebuild(first, rebuilt, failures)
    finally:
        agg.stop(first)
        agg.stop(rebuilt)
        influx.stop()
    same = not agg.differences(before, after)
    run.notes.append(f"compaction removed {removed} snapshots, kept {kept}; {len(before)} series "
                     f"totals, rebuilt from scratch the same: {same}")  # fmt: skip
    return run.result("metrics_compacted", recover_s=recover_s, mid_run=bool(removed) and sending,
                      duplicates_allowed=0, failures=failures)  # fmt: skip


def _wait_first_write(gate: InfluxGate, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not gate.log.writes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the aggregator wrote nothing to InfluxDB in {timeout_s:.0f} s")
        time.sleep(0.5)


def _first_write_after(gate: InfluxGate, timeout_s: float) -> float | None:
    """When the first write after the kill reached InfluxDB (the restarted aggregator's)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and gate.log.killed_at is not None:
        later = [at for at, _ in gate.log.writes if at > gate.log.killed_at]
        if later:
            return min(later)
        time.sleep(0.5)
    return None


def _replayed(gate: InfluxGate) -> list[str]:
    """The lines of the killed write that no later write repeated exactly."""
    if gate.log.killed_write is None or gate.log.killed_at is None:
        return []
    later = {line for at, lines in gate.log.writes if at > gate.log.killed_at for line in lines}
    return [line for line in gate.log.killed_write if line not in later]


def _compact_quickly(settings: Settings, topic: str) -> None:
    """Roll ``topic``'s segments every SEGMENT_MS and let the cleaner take any dirty share."""

    entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
               for name, value in (("segment.ms", str(SEGMENT_MS)),
                                   ("min.cleanable.dirty.ratio", "0.01"),
                                   ("min.compaction.lag.ms", "0"))]  # fmt: skip
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    admin = AdminClient(admin_config(settings, log_level=2))
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _wait_compacted(settings: Settings, topic: str, timeout_s: float) -> tuple[int, int]:
    """(snapshots the cleaner removed, snapshots left) once it removed some, or (0, left)."""
    deadline = time.monotonic() + timeout_s
    while True:
        offsets, left = agg.count_records(settings, topic)
        if offsets > left or time.monotonic() > deadline:
            return offsets - left, left
        time.sleep(3)
