"""The aggregator's counters and its status file, ``$MESH_HOME/metrics_aggregator/status.json``.

Counters are plain integers behind one lock (two queries call back from two driver threads);
``mesh status`` and the aggregator's own metrics read them. The file is replaced whole after
every batch (shared.json_files.write_json_atomic). Fields:

  service, instance_id, pid, state (running | stopped | failed), started, updated (epoch s),
  last_batch_ms, batches, batches_by_query, snapshots_in, dead_letters, window_counts_in,
  series, instances {live, stale}, points {series, windows},
  files {directory, written, bytes, failures, last_error, path},
  influx (null without a URL) {url, database, written, buffered, dropped, rejected, failures,
  last_error, healthy, last_success_ms}, topics {metrics, windows, dlq}, last_error.

``instances`` counts distinct instance ids seen in this run's snapshots: live when the newest
snapshot of the id is younger than the stale TTL (wall clock), stale otherwise.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.influx.files import FileStats
from shared.influx.writer import WriterStats

RUNNING, STOPPED, FAILED = "running", "stopped", "failed"


@dataclass
class Counters:
    """Totals since start; change them through :meth:`add` (thread-safe)."""

    batches: int = 0
    snapshots_in: int = 0
    dead_letters: int = 0
    window_counts_in: int = 0
    series_points: int = 0
    window_points: int = 0
    last_batch_ms: int = 0
    batches_by_query: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, query: str, **amounts: int) -> None:
        """Count one batch of ``query`` and add ``amounts`` (field name -> increment)."""
        with self._lock:
            self.batches += 1
            self.batches_by_query[query] = self.batches_by_query.get(query, 0) + 1
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)
            self.last_batch_ms = int(time.time() * 1000)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out.pop("_lock")
        out["batches_by_query"] = dict(out["batches_by_query"])
        return out


class InstanceTable:
    """Distinct instance ids and their newest snapshot time, for the live/stale figures.

    Ids silent for ``forget_after_ms`` are forgotten, so the table stays bounded.
    """

    def __init__(self, stale_after_ms: int, forget_after_ms: int | None = None) -> None:
        self.stale_after_ms = stale_after_ms
        self.forget_after_ms = forget_after_ms or max(stale_after_ms * 60, 3_600_000)
        self._newest: dict[str, int] = {}
        self._series: dict[tuple[str, str, str], None] = {}
        self._lock = threading.Lock()

    def update(self, rows: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            for row in rows:
                self._series[(row["service"], row["name"], row["tags"])] = None
                instance = row.get("instance")
                if instance:
                    newest = self._newest.get(instance, 0)
                    self._newest[instance] = max(newest, int(row["time_ms"]))

    def figures(self, now_ms: int) -> dict[str, int]:
        with self._lock:
            for iid in [i for i, t in self._newest.items() if now_ms - t >= self.forget_after_ms]:
                del self._newest[iid]
            live = sum(1 for t in self._newest.values() if now_ms - t < self.stale_after_ms)
            return {
                "series": len(self._series),
                "live": live,
                "stale": len(self._newest) - live,
            }


def status_document(
    *,
    instance_id: str,
    state: str,
    started_s: float,
    counters: Mapping[str, Any],
    instances: Mapping[str, int],
    files: FileStats,
    files_dir: str,
    influx: WriterStats | None,
    influx_target: tuple[str, str] | None,
    topics: Mapping[str, str],
    last_error: str | None = None,
    waiting: list[str] | None = None,
    now_s: float | None = None,
) -> dict[str, Any]:
    now_s = time.time() if now_s is None else now_s
    influx_doc = None
    if influx is not None and influx_target is not None:
        influx_doc = {
            "url": influx_target[0],
            "database": influx_target[1],
            **dataclasses.asdict(influx),
        }
    return {
        "service": "metrics_aggregator",
        "instance_id": instance_id,
        "pid": os.getpid(),
        "state": state,
        "started": round(started_s, 3),
        "updated": round(now_s, 3),
        "last_batch_ms": counters.get("last_batch_ms", 0),
        "batches": counters.get("batches", 0),
        "batches_by_query": dict(counters.get("batches_by_query", {})),
        "snapshots_in": counters.get("snapshots_in", 0),
        "dead_letters": counters.get("dead_letters", 0),
        "window_counts_in": counters.get("window_counts_in", 0),
        "series": instances.get("series", 0),
        "instances": {"live": instances.get("live", 0), "stale": instances.get("stale", 0)},
        "points": {
            "series": counters.get("series_points", 0),
            "windows": counters.get("window_points", 0),
        },
        "files": {"directory": files_dir, **dataclasses.asdict(files)},
        "influx": influx_doc,
        "topics": dict(topics),
        "last_error": last_error,
        "waiting": list(waiting or []),
    }
