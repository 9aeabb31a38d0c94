"""Case 5: the ingest job killed with SIGKILL mid-stream, in each routing mode; its supervisor
restarts it on its checkpoint, and every raw record is routed at least once, window counts exact.

* micro-batch: the job reads a backlog in small micro-batches (BATCH records), so the kill lands
  between batches of a run far from done; what a restart replays is the uncommitted batches.
* real-time: records arrive at a steady rate while the job routes them as they come, and the kill
  comes while the feed runs; a restart replays the real-time batch it interrupted (one checkpoint
  interval's worth, or more where that batch caught up a backlog). The long form first stops
  the job gracefully (SIGTERM, as `mesh down` sends) and starts it again: the stop waits for
  routing's next checkpoint, so of what was routed before it only the next batch's first
  moments (at most a second of records) are routed again.

The whole job dies at once, its Python driver and the Spark JVM under it, as when its machine or
container dies (a JVM left alone would go on routing while it shuts down). No one runs `mesh up`
again: the supervisor must restart the job and say it was killed.

Figures: a raw record's identity is its coordinates (:mod:`chaos.ingest_run`); *seen* are those
routed (to a records topic or the dead letters, never both), *duplicated* the routings beyond
the first, *recovered in* the time from the kill until the restarted job routed again. The
duplicates allowed are exact, not a time bound: the records the killed job had routed beyond the
offsets its checkpoint had committed, read at the kill (:mod:`chaos.replay_scope`); a committed
record routed again, or a record routed twice after the kill, fails the case. The kill waits for
routing's first commit, so it always interrupts a job that has one to restart from. Order
within a key is not a routing guarantee (records are re-keyed by type), so it is not counted.
"""

from __future__ import annotations

import time
from pathlib import Path

from chaos.ingest_run import BATCH, IngestMesh, RawFeed, routing_mode, routing_verdict
from chaos.replay_scope import read_mark, replay_verdict
from chaos.report import CaseResult
from control.supervised_service import supervised_child
from shared.local_process import LocalProcess
from shared.service_files import MICRO_BATCH, REAL_TIME
from shared.settings import Settings
from testkit.service_kill import halt_service, kill_service

#: Raw records per second of the real-time feed.
RATE = 400


def ingest_kill_real_time(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _ingest_kill(settings, work, short, REAL_TIME)


def ingest_kill_micro_batch(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _ingest_kill(settings, work, short, MICRO_BATCH)


def _ingest_kill(settings: Settings, work: Path, short: bool, mode: str) -> CaseResult:
    real_time = mode == REAL_TIME
    name = f"ingest_kill_{mode.replace('-', '_')}"
    mesh = IngestMesh.create(settings, work, mode, interval_s=5 if short else 10)
    feed = RawFeed(mesh, rate=RATE if real_time else 0, slice_s=5 if real_time else 30)
    after_kill_s = 5 if short else 10
    failures: list[str] = []
    graceful: set[str] = set()
    notes_before_kill: list[str] = []
    process = mesh.process
    if not real_time:  # a backlog, read in small batches
        feed.send_slice(4 * BATCH if short else None)
    try:
        mesh.start()
        if real_time:  # records arrive while the job runs
            feed.start()
        mesh.wait_routed(2 * BATCH, 240, "the first records routed")
        said = routing_mode(process.log_file)
        if said != mode:
            failures.append(f"the job routes {said}, not {mode}")
        if real_time and not short:
            # SIGTERM stops real-time routing at its next checkpoint: what it routed is
            # committed, and the restarted job routes next to none of it again.
            process.stop()
            graceful = set(mesh.sources()[0])
            mesh.start()
            mesh.wait_routed(len(graceful) + BATCH, 240, "routing after the graceful restart")
        # The kill comes once routing has committed a batch: what a restart may repeat is
        # then the records routed beyond that commit, read exactly at the kill (replay_scope).
        mesh.wait_committed(240)
        if not mesh.wait_routing_past_commit(RATE if real_time else BATCH // 2, 60):
            notes_before_kill.append("no stretch of routing past a commit found before the kill")
        running_at_kill, delivered_at_kill = feed.running or not real_time, feed.delivered
        doomed = kill_service(process)
        if not doomed:
            raise RuntimeError("no ingest job under the supervisor to kill")
        if len(doomed) == 1:
            failures.append("no Spark JVM under the job")
        killed_at = time.monotonic()
        if not all(process.wait_gone(pid, 30) for pid in doomed):
            failures.append("the job survived SIGKILL")
        mark = read_mark(mesh.checkpoints / "routing", mesh.output_ends)
        routed_at_kill = sum(mark.outputs.values())
        restart = _restarted(process, doomed[0], 60)
        if restart is None:
            failures.append("the supervisor did not restart the job within 60 s")
        elif restart != "killed by SIGKILL":
            failures.append(f"the supervisor says the job ended with {restart!r}")
        recover = _resumed(mesh, routed_at_kill, 240)
        recover_s = recover - killed_at if recover is not None else None
        if real_time:
            time.sleep(after_kill_s)  # records keep coming once the job is back
        feed.stop()
        mesh.wait_routed(feed.delivered, 300, "the restarted job to drain the input")
        mesh.wait_quiet()
        windows = mesh.wait_windows(feed.delivered)
    finally:
        feed.stop()
        halt_service(process)

    routings = mesh.routings()
    figures, breaches, sources = routing_verdict(mesh, feed, windows, routings)
    replays = replay_verdict(mark, routings)
    failures += breaches + replays.failures
    # Mid-run: routing had begun, records were still arriving (real-time) or waiting in the
    # backlog (micro-batch), and records the feed delivered after the kill were routed too.
    mid_run = (
        routed_at_kill > 0
        and running_at_kill
        and (feed.delivered > delivered_at_kill if real_time else routed_at_kill < feed.delivered)
    )
    notes = [f"{mode}: {routed_at_kill} routed before the kill, {replays.replayable} of them "
             f"beyond the committed checkpoint, {replays.replayed} routed again; "
             f"windows {dict(windows)}",
             "order within a key: not counted (routing re-keys records by type)",
             *notes_before_kill]  # fmt: skip
    again = 0
    if graceful:
        again = sum(1 for c in graceful if sources[c] > 1)
        notes.append(f"SIGTERM first: {again} of {len(graceful)} records routed before it "
                     "were routed again")  # fmt: skip
        if again > RATE:  # a stop that cancelled the batch would replay a whole interval
            failures.append(f"{again} records routed before the graceful stop came again")
    # What a restart may replay: what the killed job routed beyond its committed checkpoint
    # (plus the graceful stop's repeats, bounded above).
    allowed = replays.replayable + again
    return CaseResult(name, figures, recover_s, mid_run, allowed, 0, notes, failures)


def _restarted(process: LocalProcess, old_pid: int, timeout_s: float) -> str | None:
    """How the supervisor says the killed job ended, once it runs a new one; None if it does
    not within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        child = supervised_child(process)
        if child is not None and child.restarts >= 1 and child.pid not in (None, old_pid):
            return child.last_exit
        time.sleep(0.5)
    return None


def _resumed(mesh: IngestMesh, routed_at_kill: int, timeout_s: float) -> float | None:
    """When (time.monotonic()) the outputs grew past what the killed job had routed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if mesh.routed() > routed_at_kill:
            return time.monotonic()
        time.sleep(0.5)
    return None
