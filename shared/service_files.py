"""The files a service keeps under ``$MESH_HOME/<service>/`` for the control plane to read.

A service writes its state (how ingest routes, the aggregator's figures) as JSON in its own folder;
`mesh status` reads it from there. This module is the contract between the two: the folder names
and the file paths, so neither side imports the other's code.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The local processes (and their folders under MESH_HOME) of the Spark jobs and the notifier.
INGEST, METRICS_AGGREGATOR, NOTIFIER = "ingest", "metrics_aggregator", "notifier"
HISTORY = "history"
#: How ingest routes, as its file says (services.ingest.trigger_mode decides which).
REAL_TIME, MICRO_BATCH = "real-time", "micro-batch"


def ingest_mode_file(home: Path) -> Path:
    """Where a running ingest job keeps its routing plan (mode, master, raw partitions, why)."""
    return home / INGEST / "routing-mode.json"


def ingest_status_file(home: Path) -> Path:
    """Where the ingest job keeps what an operator must hear of: raw records it had to skip
    (``data_loss``) and, when it refused to start, why (``last_error``)."""
    return home / INGEST / "status.json"


def aggregator_status_file(home: Path) -> Path:
    """Where the running metrics aggregator keeps its figures (snapshots, series, InfluxDB)."""
    return home / METRICS_AGGREGATOR / "status.json"


def history_location(home: Path, configured: str = "") -> str:
    """Where the history's tables are: ``configured`` (MESH_HISTORY_LOCATION), else
    ``file://$MESH_HOME/history/tables``."""
    return configured or (home / HISTORY / "tables").resolve().as_uri()


def history_checkpoint(home: Path) -> Path:
    """The history query's checkpoint (its offsets and commits say how far it got)."""
    return home / HISTORY / "checkpoint"


def history_status_file(home: Path) -> Path:
    """Where the running history job says it is storing: when its query started, the last
    batch it wrote (a container's health check and `mesh status` read it)."""
    return home / HISTORY / "status.json"


def notifier_status_file(home: Path) -> Path:
    """Where the running local notifier keeps its figures (deliveries per channel, duplicates)."""
    return home / NOTIFIER / "status.json"


def routing_mode_text(saved: Mapping[str, Any] | None) -> str:
    """``real-time on local[21] (16 raw partitions)``, or why it runs micro-batch; '' unknown."""
    if not saved:
        return ""
    text = f"{saved['ingest_mode']} on {saved.get('master', '?')} ({saved['raw_partitions']} raw "
    text += "partitions)"
    if saved["ingest_mode"] != REAL_TIME:
        text += f": {saved['reason']}"
    return text


def data_loss_text(status: Mapping[str, Any] | None) -> str:
    """``DATA LOSS: 1200 raw records skipped (2 ranges, the last at 14:02:11)``; '' if none."""
    ranges = (status or {}).get("data_loss") or []
    if not ranges:
        return ""
    last = time.strftime("%H:%M:%S", time.localtime(max(r["at"] for r in ranges)))
    routing = [r for r in ranges if r["query"] == "routing"] or ranges
    total = sum(r["count"] for r in routing)
    return f"DATA LOSS: {total} raw records skipped ({len(ranges)} ranges, the last at {last})"


def acknowledge_data_loss(status: Mapping[str, Any], now: float) -> dict[str, Any]:
    """``status`` with its reported ranges moved to ``data_loss_acknowledged`` (stamped
    ``acknowledged_at``): `mesh status` stops showing them, and the job, which looks in both
    lists, does not report them again. The newest ranges are kept there too, never deleted."""
    moved = [{**r, "acknowledged_at": now} for r in status.get("data_loss") or []]
    kept = [*(status.get("data_loss_acknowledged") or []), *moved][-KEPT_ACKNOWLEDGED:]
    return {**status, "data_loss": [], "data_loss_acknowledged": kept}


#: Acknowledged data-loss ranges kept in the ingest status file (the oldest go first).
KEPT_ACKNOWLEDGED = 200


def notifier_text(status: Mapping[str, Any]) -> str:
    """``delivered fraud-team 12, audit-log 30; 3 duplicates suppressed; 0 pending; ...``."""
    delivered = ", ".join(f"{c} {n}" for c, n in sorted(status.get("delivered", {}).items()))
    failed = ", ".join(f"{c} {n}" for c, n in sorted(status.get("failed", {}).items()))
    text = f"delivered {delivered or 'none'}; {status.get('duplicates', 0)} duplicates suppressed"
    text += f"; {status.get('pending', 0)} pending"
    if failed:
        text += f"; FAILED (dead-lettered) {failed}"
    latency = [f"{c} p50 {v['p50']:.0f} / p99 {v['p99']:.0f} ms"
               for c, v in sorted(status.get("end_to_end_ms", {}).items())]  # fmt: skip
    if latency:
        text += "; raw record -> notification " + ", ".join(latency)
    breakers = sorted(status.get("breakers", {}).items())
    open_breakers = [channel for channel, state in breakers if state != "closed"]
    if open_breakers:
        text += f"; breaker open: {', '.join(open_breakers)}"
    return text
