"""Output rows -> InfluxDB points (docs/metrics.md, "InfluxDB schema").

Series rows (from :mod:`series_step`): measurement = metric name; tags = the metric's own tags,
``service``, ``scope`` and, for ``scope=instance``, ``instance`` (these three win over a metric
tag of the same name); fields = the row's non-null figures, ``count``, ``instances`` and
``stale_instances`` as integers (``i`` in line protocol), the rest as floats; time = the row's
``time_ms`` in nanoseconds.

Ingest windows: measurement ``ingest.window``, tags ``source_topic`` and ``outcome`` (the window
status in lower case: ``valid``, ``invalid``, or ``late`` for valid records counted as late),
field ``count``, time = window start.

Points come out sorted (measurement, tags, time), so the same rows in any order give the same
points and the same ``.lp`` bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from services.metrics_aggregator.series_step import INSTANCE
from services.metrics_aggregator.snapshots import FLOAT_FIELDS, parse_tags
from shared.influx.line_protocol import Point

WINDOW_MEASUREMENT = "ingest.window"
_NS_PER_MS = 1_000_000

#: Field order of a series point, and which fields are integers.
SERIES_FIELDS = ("count", *FLOAT_FIELDS, "instances", "stale_instances")
INT_FIELDS = frozenset({"count", "instances", "stale_instances"})


def series_point(row: Mapping[str, Any]) -> Point:
    tags = parse_tags(row.get("tags"))
    tags["service"] = str(row["service"])
    tags["scope"] = str(row["scope"])
    if row["scope"] == INSTANCE:
        tags["instance"] = str(row["instance"])
    fields: dict[str, int | float] = {}
    for name in SERIES_FIELDS:
        value = row.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        fields[name] = int(value) if name in INT_FIELDS else float(value)
    return Point(str(row["name"]), tags, fields, int(row["time_ms"]) * _NS_PER_MS)


def series_points(rows: Iterable[Mapping[str, Any]]) -> list[Point]:
    return sort_points(series_point(row) for row in rows)


def window_point(source_topic: str, window_start_ms: int, status: str, count: int) -> Point:
    return Point(
        WINDOW_MEASUREMENT,
        {"source_topic": source_topic, "outcome": status.lower()},
        {"count": int(count)},
        int(window_start_ms) * _NS_PER_MS,
    )


def window_points(rows: Iterable[Mapping[str, Any]]) -> list[Point]:
    """Points of rows with ``source_topic``, ``window_start`` (ms), ``status``, ``count``."""
    return sort_points(
        window_point(r["source_topic"], r["window_start"], r["status"], r["count"]) for r in rows
    )


def sort_points(points: Iterable[Point]) -> list[Point]:
    return sorted(points, key=lambda p: (p.measurement, sorted(p.tags.items()), p.time_ns))
