"""Exponentially weighted moving averages, exactly as Dropwizard's ``EWMA`` computes them.

Every 5 s a tick turns the events seen since the previous tick into an instant rate
(events / 5 s) and moves the average towards it by ``alpha = 1 - exp(-5 / 60 / minutes)``;
the first tick sets the average to the instant rate. :func:`advance` applies several ticks at
once, which is how a lazy meter catches up after a quiet spell: the first tick carries the
events, the others carry none and only decay, ``rate * (1 - alpha) ** (ticks - 1)``.
"""

from __future__ import annotations

import math

#: Seconds between two ticks (Dropwizard's ``TICK_INTERVAL``).
TICK_INTERVAL_S = 5.0


def alpha(minutes: float, interval_s: float = TICK_INTERVAL_S) -> float:
    """Smoothing factor of a ``minutes`` average ticked every ``interval_s`` seconds."""
    return 1.0 - math.exp(-interval_s / 60.0 / minutes)


M1_ALPHA = alpha(1)
M5_ALPHA = alpha(5)
M15_ALPHA = alpha(15)


def advance(
    rate: float | None, alpha: float, events: int, ticks: int, interval_s: float = TICK_INTERVAL_S
) -> float:
    """The average after ``ticks`` ticks (>= 1), the first of which saw ``events``.

    ``rate`` is in events per second, None before the first tick (not yet initialised).
    """
    instant = events / interval_s
    rate = instant if rate is None else rate + alpha * (instant - rate)
    if ticks > 1:
        rate *= (1.0 - alpha) ** (ticks - 1)
    return rate


class EWMA:
    """One moving average with Dropwizard's interface: ``update(n)``, ``tick()``, ``rate``.

    :class:`~shared.metrics.meter.Meter` keeps its three averages in one immutable state
    instead (see there); this class is the reference the tests hold :func:`advance` to.
    """

    __slots__ = ("_rate", "_uncounted", "alpha", "interval_s")

    def __init__(self, alpha: float, interval_s: float = TICK_INTERVAL_S) -> None:
        self.alpha = alpha
        self.interval_s = interval_s
        self._rate: float | None = None
        self._uncounted = 0

    @classmethod
    def one_minute(cls) -> EWMA:
        return cls(M1_ALPHA)

    @classmethod
    def five_minute(cls) -> EWMA:
        return cls(M5_ALPHA)

    @classmethod
    def fifteen_minute(cls) -> EWMA:
        return cls(M15_ALPHA)

    def update(self, n: int) -> None:
        self._uncounted += n

    def tick(self, ticks: int = 1) -> None:
        """Apply ``ticks`` ticks; the events since the last one count towards the first."""
        self._rate = advance(self._rate, self.alpha, self._uncounted, ticks, self.interval_s)
        self._uncounted = 0

    @property
    def rate(self) -> float:
        """Events per second (0 before the first tick)."""
        return self._rate or 0.0
