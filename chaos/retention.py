"""Case 6: raw records removed by retention while the ingest job is stopped: reported, never silent.

A first run of raw records is routed; the job is stopped (SIGTERM, as `mesh down` sends) and a
second run comes while it is away. Then retention takes the older half of what the job has not
read yet: the case moves each raw partition's log start offset there with Kafka's DeleteRecords
request, which is what the broker's retention does to a log (without waiting minutes for its
retention check to come round).

The job is started first with ``MESH_INGEST_ON_DATA_LOSS=fail``: it must refuse, and its
supervisor must give the ranges as the reason. Then it is started as configured by default
(``report``): it must name every skipped range exactly, once (its log, its status file, which
`mesh status` shows) and route everything that is left, and a third run sent after it started.
The short form routes micro-batch; the long form real-time, whose reader cannot skip a gap: the
job must get past it micro-batch and be back in real-time mode at the end.

Figures: *lost* counts records neither routed nor in a reported range (a silent loss); the
records retention took are in the notes, with what the job reported of them.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from chaos.ingest_run import IngestMesh, RawFeed
from chaos.report import CaseResult
from chaos.smoke import SmokeFigures
from control.supervised_service import supervised_child
from shared.json_files import read_json
from shared.kafka.config import admin_config
from shared.service_files import (
    MICRO_BATCH,
    REAL_TIME,
    data_loss_text,
    ingest_mode_file,
    ingest_status_file,
)
from shared.settings import Settings
from testkit.service_kill import halt_service

#: What the job's refusal (fail mode) and its report (report mode) must say.
REFUSAL, REPORT = "data loss: ", "DATA LOSS: "


def retention_loss(settings: Settings, work: Path, short: bool) -> CaseResult:
    mode = MICRO_BATCH if short else REAL_TIME
    mesh = IngestMesh.create(settings, work, mode, interval_s=5)
    feed = RawFeed(mesh, rate=0, slice_s=5)
    count = 1000 if short else 4000
    process = mesh.process
    failures: list[str] = []
    feed.send_slice(count)
    try:
        mesh.start()
        mesh.wait_routed(feed.delivered, 240, "the first run routed")
        mesh.wait_quiet()
        mesh.wait_counted(feed.delivered)  # so the stop aborts no batch of the counts
        process.stop()  # SIGTERM: real-time routing stops at its next checkpoint
        read = {tp: high for tp, (_, high) in mesh.watermarks(mesh.raw).items()}
        feed.send_slice(2 * count)  # while the job is away
        now = {tp: high for tp, (_, high) in mesh.watermarks(mesh.raw).items()}
        cut = {tp: read[tp] + (now[tp] - read[tp]) // 2 for tp in now}
        _delete_before(mesh, cut)
        removed = {tp: (read[tp], cut[tp]) for tp in cut if cut[tp] > read[tp]}
        mid_run = bool(removed) and sum(read.values()) > 0
        refusal = _refused(mesh, 60)
        if refusal is None:
            failures.append("with MESH_INGEST_ON_DATA_LOSS=fail the job did not refuse to start")
        elif f"{sum(b - a for a, b in removed.values())} raw records skipped" not in refusal:
            failures.append(f"the refusal miscounts the loss: {refusal[:300]}")
        started_at = time.monotonic()
        mesh.start()
        feed.send_slice(count)  # after the restart: the job must go on routing
        left = feed.delivered - sum(b - a for a, b in removed.values())
        mesh.wait_routed(left, 240, "the rest routed")
        recover_s = time.monotonic() - started_at
        mesh.wait_quiet()
        status = read_json(ingest_status_file(mesh.settings.home)) or {}
        routing_now = (read_json(ingest_mode_file(mesh.settings.home)) or {}).get("ingest_mode")
        log = process.log_file.read_text(errors="replace")
        windows = mesh.wait_windows(feed.delivered - _skipped(status, "counts"), 60)
    finally:
        halt_service(process)

    reported = {(r["topic"], r["partition"]): (r["first"], r["end"])
                for r in status.get("data_loss", []) if r["query"] == "routing"}  # fmt: skip
    if reported != removed:
        failures.append(f"routing reported {sorted(reported.items())[:3]}, retention removed "
                        f"{sorted(removed.items())[:3]}")  # fmt: skip
    lines = [line for line in log.splitlines() if REPORT in line and "routing skips" in line]
    if len(lines) != len(removed):
        failures.append(f"{len(lines)} DATA LOSS lines for routing in the job's log, "
                        f"{len(removed)} ranges removed")  # fmt: skip
    if routing_now != mode:  # real-time: micro-batch past the gap, then real-time again
        failures.append(f"routing runs {routing_now} after the gap, not {mode}")
    if not data_loss_text(status):
        failures.append("`mesh status` does not show the data loss")
    counted = feed.delivered - _skipped(status, "counts")
    if sum(windows.values()) != counted:
        failures.append(f"window counts {dict(windows)}, {counted} expected: {feed.delivered} "
                        "records less those the counts query reported skipped")  # fmt: skip
    sources, split = mesh.sources()
    if split:
        failures.append(f"{split} raw records landed in a records topic and the dead letters")
    acknowledged = mesh.raw_coordinates()
    gone = {f"{t}:{p}:{o}" for (t, p), (a, b) in reported.items() for o in range(a, b)}
    seen = len(acknowledged & set(sources))
    figures = SmokeFigures(sent=feed.sent, acknowledged=feed.delivered, seen=seen,
                           lost=len(acknowledged - set(sources) - gone),
                           duplicated=sum(n - 1 for n in sources.values()), out_of_order=0,
                           dead_lettered=len(gone))  # fmt: skip
    notes = [f"{mode}: retention removed {sum(b - a for a, b in removed.values())} unread "
             f"records in {len(removed)} partitions; reported {len(gone)} "
             "(counted as dead letters: accounted for, not lost)",
             f"fail mode refused: {(refusal or '-')[:160]}"]  # fmt: skip
    return CaseResult("retention_loss", figures, recover_s, mid_run, 0, 0, notes, failures)


def _delete_before(mesh: IngestMesh, offsets: dict[tuple[str, int], int]) -> None:
    """Move each partition's log start offset to ``offsets`` (what retention does)."""

    admin = AdminClient(admin_config(mesh.settings, log_level=2))
    wanted = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
    for future in admin.delete_records(wanted, operation_timeout=30).values():
        future.result(60)


def _refused(mesh: IngestMesh, timeout_s: float) -> str | None:
    """Start the job in fail mode; the reason its supervisor gives for its exit, once it has
    refused (it is stopped then), or None if it does not refuse in ``timeout_s``."""
    mesh.start(MESH_INGEST_ON_DATA_LOSS="fail")
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            child = supervised_child(mesh.process)
            if child is not None and REFUSAL in (child.last_exit or ""):
                return child.last_exit
            time.sleep(0.5)
        return None
    finally:
        halt_service(mesh.process)  # it refused: there is nothing to stop gracefully


def _skipped(status: dict, query: str) -> int:
    return sum(r["count"] for r in status.get("data_loss", []) if r["query"] == query)
