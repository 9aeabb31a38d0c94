"""Histogram: the distribution of a value (end-to-end delay), over a decaying reservoir.

``count`` is every update ever made; the statistics (min, max, mean, stddev, percentiles) are
those of the reservoir's recency-biased sample, as in Dropwizard, so ``min`` and ``max`` are the
sample's and describe roughly the last five minutes rather than the life of the process.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from shared.metrics.clock import Clock
from shared.metrics.reservoir import ExponentiallyDecayingReservoir


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """A histogram at one moment. With no sample yet every statistic is 0 (Dropwizard)."""

    count: int
    min: float
    max: float
    mean: float
    stddev: float
    p50: float
    p75: float
    p95: float
    p98: float
    p99: float
    p999: float
    #: Samples the statistics come from (at most the reservoir's size); 0 = no statistics.
    samples: int = 0


class Histogram:
    """Counts values and keeps a sample of them for percentiles.

    Thread safety: one writer thread per histogram, any number of readers (see
    :class:`~shared.metrics.reservoir.ExponentiallyDecayingReservoir`).
    """

    __slots__ = ("_count", "_reservoir")
    TYPE: ClassVar[str] = "HISTOGRAM"

    def __init__(
        self, clock: Clock = time.monotonic, reservoir: ExponentiallyDecayingReservoir | None = None
    ) -> None:
        self._count = 0
        self._reservoir = reservoir or ExponentiallyDecayingReservoir(clock=clock)

    def update(self, value: float) -> None:
        """Record one value."""
        self._count += 1
        self._reservoir.update(value)

    def update_at(self, now: float, value: float) -> None:
        """:meth:`update` with the caller's clock reading (a timer reads the clock once)."""
        self._count += 1
        self._reservoir.update(value, now)

    def update_many(self, values: Iterable[float]) -> None:
        """Record a batch of values observed now: cheaper per value than :meth:`update`."""
        self._count += self._reservoir.update_many(values)

    def update_many_at(self, now: float, values: Iterable[float]) -> None:
        """:meth:`update_many` with the caller's clock reading (a timer reads the clock once)."""
        self._count += self._reservoir.update_many(values, now)

    @property
    def count(self) -> int:
        return self._count

    def snapshot(self) -> HistogramSnapshot:
        count = self._count
        sample = self._reservoir.snapshot()
        q = sample.value
        return HistogramSnapshot(
            count=count,
            min=sample.min,
            max=sample.max,
            mean=sample.mean,
            stddev=sample.stddev,
            p50=q(0.5),
            p75=q(0.75),
            p95=q(0.95),
            p98=q(0.98),
            p99=q(0.99),
            p999=q(0.999),
            samples=sample.size,
        )

    def __repr__(self) -> str:
        return f"Histogram(count={self._count})"
