"""Meter: a count of events plus Dropwizard's 1-, 5- and 15-minute rates and the mean rate.

Ticks are lazy, as in Dropwizard's ``Meter.tickIfNecessary``: nothing runs in the background;
every ``mark`` and every read first applies the ticks due since the last one (all of them at
once, with :func:`~shared.metrics.ewma.advance`), and the tick boundary stays on the 5 s grid
that started when the meter was created.

The hot path is one clock read, one comparison and one addition. Instead of Dropwizard's
"uncounted" adder that a tick resets (a reset would race with a concurrent ``mark``), the meter
keeps one cumulative count and the tick state remembers how much of it was already counted;
the tick state is one tuple, replaced whole, so a reader never sees half a tick.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from shared.metrics.clock import Clock
from shared.metrics.counter import checked_increment
from shared.metrics.ewma import M1_ALPHA, M5_ALPHA, M15_ALPHA, TICK_INTERVAL_S, advance


class _Ticked(NamedTuple):
    """Where the averages stood at the last tick. Rates are None before the first tick."""

    at: float
    counted: int
    m1: float | None
    m5: float | None
    m15: float | None


@dataclass(frozen=True, slots=True)
class MeterRates:
    """A meter read at one moment: its count and rates in events per second."""

    count: int
    m1_rate: float
    m5_rate: float
    m15_rate: float
    mean_rate: float


class Meter:
    """Events and their rates (events/s), Dropwizard semantics.

    Thread safety: ``mark`` takes no lock; one writer thread per meter plus readers is safe
    (readers may also apply a due tick: both sides derive the new state from one consistent
    tuple and the cumulative count, so a tick applied twice or by either side loses nothing).
    """

    __slots__ = ("_clock", "_count", "_due", "_start", "_ticked")
    TYPE: ClassVar[str] = "METER"

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        now = clock()
        self._start = now
        self._count = 0
        self._ticked = _Ticked(now, 0, None, None, None)
        #: When the next tick is due (a hint for the hot path; the state tuple is the truth).
        self._due = now + TICK_INTERVAL_S

    def mark(self, n: int = 1) -> None:
        """Record ``n`` (>= 0) events now."""
        if n.__class__ is not int or n < 0:
            n = checked_increment(n)
        now = self._clock()
        if now > self._due:
            self._tick_if_due(now)
        self._count += n

    def mark_at(self, now: float, n: int = 1) -> None:
        """:meth:`mark` with the caller's clock reading (a timer reads the clock once)."""
        if now > self._due:
            self._tick_if_due(now)
        self._count += n

    @property
    def count(self) -> int:
        return self._count

    @property
    def m1_rate(self) -> float:
        return self._tick_if_due(self._clock()).m1 or 0.0

    @property
    def m5_rate(self) -> float:
        return self._tick_if_due(self._clock()).m5 or 0.0

    @property
    def m15_rate(self) -> float:
        return self._tick_if_due(self._clock()).m15 or 0.0

    @property
    def mean_rate(self) -> float:
        """Events per second since the meter was created."""
        return self._mean_rate(self._count, self._clock())

    def rates(self) -> MeterRates:
        """Count and every rate read at the same moment (what a snapshot reports)."""
        now = self._clock()
        ticked = self._tick_if_due(now)
        count = self._count
        return MeterRates(
            count,
            ticked.m1 or 0.0,
            ticked.m5 or 0.0,
            ticked.m15 or 0.0,
            self._mean_rate(count, now),
        )

    def _mean_rate(self, count: int, now: float) -> float:
        elapsed = now - self._start
        return count / elapsed if count and elapsed > 0 else 0.0

    def _tick_if_due(self, now: float) -> _Ticked:
        """Apply the ticks due at ``now`` (Dropwizard: more than one interval since the last)."""
        ticked = self._ticked
        age = now - ticked.at
        if age <= TICK_INTERVAL_S:
            return ticked
        ticks = int(age // TICK_INTERVAL_S)
        count = self._count
        events = count - ticked.counted
        at = now - age % TICK_INTERVAL_S
        ticked = _Ticked(
            at,
            count,
            advance(ticked.m1, M1_ALPHA, events, ticks),
            advance(ticked.m5, M5_ALPHA, events, ticks),
            advance(ticked.m15, M15_ALPHA, events, ticks),
        )
        self._ticked = ticked
        self._due = at + TICK_INTERVAL_S
        return ticked

    def __repr__(self) -> str:
        return f"Meter(count={self._count})"
