"""The ``scope=all`` figures of a series, from its state (docs/metrics.md, cross-instance rules).

- counts: every instance's latest count, live or retired (table semantics: never goes down when
  an instance leaves, and a restarted instance under a new id adds);
- rates and gauges: summed over live instances (0.0 when none is live);
- histograms and timers, over live instances: min of the mins, max of the maxes, count-weighted
  mean, pooled standard deviation, and each percentile the largest of the instances' (an upper
  bound: exact percentiles cannot be merged from summaries);
- ``instances`` (live) and ``stale_instances`` (retired, remembered or not).

Instances are visited in id order and sums use :func:`math.fsum`, so the same state always gives
bit-identical floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from services.metrics_aggregator.series_state import SeriesState
from services.metrics_aggregator.snapshots import (
    PERCENTILE_FIELDS,
    RATE_FIELDS,
    Snapshot,
    has_count,
    has_histogram,
    has_rates,
    is_gauge,
)


def total_fields(state: SeriesState) -> dict[str, int | float]:
    """The fields of the series' total point, ints as ints, in docs/metrics.md's order."""
    kind = state.type
    live = [state.live[iid] for iid in sorted(state.live)]
    out: dict[str, int | float] = {}
    if has_count(kind):
        out["count"] = sum(s.count for s in live if s.count is not None) + state.retired_count()
    if has_rates(kind):
        for name in RATE_FIELDS:
            out[name] = _sum(live, name)
    if has_histogram(kind):
        out.update(merge_histograms(live))
    if is_gauge(kind):
        out["value"] = _sum(live, "value")
    out["instances"] = len(live)
    out["stale_instances"] = state.stale_instances
    return out


def merge_histograms(live: Sequence[Snapshot]) -> dict[str, float]:
    """Histogram statistics across instances; a statistic no instance has is left out."""
    out: dict[str, float] = {}
    mins = [s.stats["min"] for s in live if "min" in s.stats]
    if mins:
        out["min"] = min(mins)
    maxes = [s.stats["max"] for s in live if "max" in s.stats]
    if maxes:
        out["max"] = max(maxes)
    with_mean = [s for s in live if "mean" in s.stats]
    if with_mean:
        weights = _weights(with_mean)
        total = math.fsum(weights)
        mean = math.fsum(w * s.stats["mean"] for w, s in zip(weights, with_mean, strict=True))
        mean /= total
        out["mean"] = mean
        pairs = [(w, s) for w, s in zip(weights, with_mean, strict=True) if "stddev" in s.stats]
        weight = math.fsum(w for w, _ in pairs)
        if weight > 0:
            pooled = math.fsum(
                w * (s.stats["stddev"] ** 2 + (s.stats["mean"] - mean) ** 2) for w, s in pairs
            )
            out["stddev"] = math.sqrt(pooled / weight)
    for name in PERCENTILE_FIELDS:
        values = [s.stats[name] for s in live if name in s.stats]
        if values:
            out[name] = max(values)
    return out


def _weights(snapshots: Sequence[Snapshot]) -> list[float]:
    """Each instance's count as its weight; equal weights when no instance has counted any."""
    weights = [float(max(s.count or 0, 0)) for s in snapshots]
    if math.fsum(weights) <= 0:
        return [1.0] * len(snapshots)
    return weights


def _sum(live: Sequence[Snapshot], name: str) -> float:
    return math.fsum(s.stats[name] for s in live if name in s.stats)
