"""Statistics of weighted samples, computed as Dropwizard's ``WeightedSnapshot`` does.

Samples are sorted by value and their weights normalised to sum to 1; the quantile ``q`` is the
value of the last sample whose cumulative weight *before* it is at most ``q`` (no
interpolation); the mean and standard deviation are weighted by the normalised weights (the
standard deviation is the population one, and 0 for fewer than two samples). An empty snapshot
reports 0 for everything, like Dropwizard; :attr:`WeightedSnapshot.size` tells the two apart.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable


class WeightedSnapshot:
    """Quantiles, min, max, mean and standard deviation of ``(value, weight)`` samples."""

    __slots__ = ("_quantiles", "_values", "_weights")

    def __init__(self, samples: Iterable[tuple[float, float]]) -> None:
        ordered = sorted(samples, key=lambda sample: sample[0])
        total = math.fsum(weight for _, weight in ordered)
        self._values = [value for value, _ in ordered]
        self._weights = [weight / total if total else 0.0 for _, weight in ordered]
        # Cumulative weight of the samples strictly before each one.
        quantiles = [0.0] * len(ordered)
        for i in range(1, len(ordered)):
            quantiles[i] = quantiles[i - 1] + self._weights[i - 1]
        self._quantiles = quantiles

    @property
    def size(self) -> int:
        return len(self._values)

    def value(self, quantile: float) -> float:
        """The value at ``quantile`` (0..1)."""
        if not 0.0 <= quantile <= 1.0:  # also refuses NaN
            raise ValueError(f"a quantile is between 0 and 1, got {quantile}")
        values = self._values
        if not values:
            return 0.0
        # Java's binarySearch then "insertion point - 1": the last index with quantiles <= q.
        position = bisect_right(self._quantiles, quantile) - 1
        if position < 1:
            return values[0]
        return values[min(position, len(values) - 1)]

    @property
    def min(self) -> float:
        return self._values[0] if self._values else 0.0

    @property
    def max(self) -> float:
        return self._values[-1] if self._values else 0.0

    @property
    def mean(self) -> float:
        return math.fsum(v * w for v, w in zip(self._values, self._weights, strict=True))

    @property
    def stddev(self) -> float:
        if len(self._values) <= 1:
            return 0.0
        mean = self.mean
        variance = math.fsum(
            w * (v - mean) ** 2 for v, w in zip(self._values, self._weights, strict=True)
        )
        return math.sqrt(variance)
