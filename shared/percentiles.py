"""Percentiles as the mesh reports them: nearest rank, so a p99 is a latency that happened.

One definition for the benchmarks' tables and pictures and for `mesh status`'s live tail, so the
figures an operator sees and the ones docs/benchmarks.md records are computed the same way.
"""

from __future__ import annotations

from collections.abc import Sequence


def nearest_rank(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))]
