"""One instance's latest figures for one series, in plain Python (no Spark, no pandas).

A :class:`Snapshot` is the part of a MetricSnapshot record the aggregator keeps: the series
(service, name, tags) is the group it belongs to, so only the instance id, the type, the
timestamp and the non-null figures remain. Which figures a type has is docs/metrics.md's table,
defined once here and used for the per-instance points and for the totals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

COUNTER, METER, HISTOGRAM, TIMER, GAUGE = "COUNTER", "METER", "HISTOGRAM", "TIMER", "GAUGE"
TYPES = (COUNTER, METER, HISTOGRAM, TIMER, GAUGE)

RATE_FIELDS = ("m1_rate", "m5_rate", "m15_rate", "mean_rate")
STAT_FIELDS = ("min", "max", "mean", "stddev")
PERCENTILE_FIELDS = ("p50", "p75", "p95", "p98", "p99", "p999")
HISTOGRAM_FIELDS = STAT_FIELDS + PERCENTILE_FIELDS
#: Every floating-point figure of the schema, in the schema's order.
FLOAT_FIELDS = (*RATE_FIELDS, *HISTOGRAM_FIELDS, "value")

_COUNTED = frozenset({COUNTER, METER, HISTOGRAM, TIMER})
_RATED = frozenset({METER, TIMER})
_DISTRIBUTED = frozenset({HISTOGRAM, TIMER})


def has_count(kind: str) -> bool:
    return kind in _COUNTED


def has_rates(kind: str) -> bool:
    return kind in _RATED


def has_histogram(kind: str) -> bool:
    return kind in _DISTRIBUTED


def is_gauge(kind: str) -> bool:
    return kind == GAUGE


def float_fields(kind: str) -> tuple[str, ...]:
    """The floating-point fields a metric of type ``kind`` has (docs/metrics.md)."""
    names: tuple[str, ...] = ()
    if has_rates(kind):
        names += RATE_FIELDS
    if has_histogram(kind):
        names += HISTOGRAM_FIELDS
    if is_gauge(kind):
        names += ("value",)
    return names


@dataclass(frozen=True)
class Snapshot:
    """One instance's snapshot of one series; ``stats`` holds the non-null float figures."""

    instance_id: str
    type: str
    #: When the snapshot was taken, epoch ms (the instance's clock).
    timestamp: int
    count: int | None = None
    stats: Mapping[str, float] = field(default_factory=dict)

    def fields(self) -> dict[str, int | float]:
        """The point fields of this snapshot, by its type (ints stay ints)."""
        out: dict[str, int | float] = {}
        if has_count(self.type) and self.count is not None:
            out["count"] = self.count
        for name in float_fields(self.type):
            value = self.stats.get(name)
            if value is not None:
                out[name] = value
        return out

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"type": self.type, "ts": self.timestamp}
        if self.count is not None:
            doc["count"] = self.count
        if self.stats:
            doc["stats"] = dict(self.stats)
        return doc

    @classmethod
    def from_dict(cls, instance_id: str, doc: Mapping[str, Any]) -> Snapshot:
        return cls(
            instance_id=instance_id,
            type=str(doc["type"]),
            timestamp=int(doc["ts"]),
            count=None if doc.get("count") is None else int(doc["count"]),
            stats={k: float(v) for k, v in (doc.get("stats") or {}).items()},
        )


def snapshot_from_record(record: Mapping[str, Any]) -> Snapshot:
    """A :class:`Snapshot` from a decoded record or an input row of the stateful step.

    Missing, None and NaN figures are left out. ``count`` may come with ``has_count`` (the Spark
    input fills a null count with 0 and says so there, so the column stays a 64-bit integer).
    """
    count: int | None = None
    raw_count = record.get("count")
    if record.get("has_count", True) and not _missing(raw_count):
        count = int(raw_count)  # type: ignore[arg-type]
    stats = {}
    for name in FLOAT_FIELDS:
        value = record.get(name)
        if not _missing(value):
            stats[name] = float(value)  # type: ignore[arg-type]
    return Snapshot(
        instance_id=str(record["instance_id"]),
        type=str(record["type"]),
        timestamp=int(record["timestamp"]),
        count=count,
        stats=stats,
    )


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def parse_tags(text: str | None) -> dict[str, str]:
    """The metric's tags from the series key column.

    The Spark side writes them as ``to_json(array_sort(map_entries(tags)))``, i.e.
    ``[{"key": "k", "value": "v"}, ...]`` sorted by key: one canonical string per tag set.
    """
    if not text:
        return {}
    return {str(item["key"]): str(item["value"]) for item in json.loads(text)}


def tags_key(tags: Mapping[str, str]) -> str:
    """The canonical series-key text of ``tags`` (what the Spark side produces)."""
    pairs = [{"key": k, "value": v} for k, v in sorted(tags.items())]
    return json.dumps(pairs, separators=(",", ":"), ensure_ascii=False)
