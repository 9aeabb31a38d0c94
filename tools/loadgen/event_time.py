"""Event times: a virtual clock that advances per record, plus bounded, realistic disorder.

Values never read the wall clock: the clock starts at a given instant and advances by
``1000 / pace`` milliseconds per record, so the same seed and start give the same bytes. When the
send rate equals the pace, event time keeps step with wall time. Real feeds are not in order:
most records are on time, a share arrive a few seconds late and a few minutes late, which is what
watermarks in the ingest and the detectors must tolerate. Lateness is bounded by ``Disorder``'s
largest delay so consumers can size their watermark.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Disorder:
    """How late records arrive, relative to the virtual clock when they are sent."""

    #: Share of records a little late, and how late (milliseconds, inclusive range).
    late_share: float = 0.05
    late_ms: tuple[int, int] = (500, 5_000)
    #: Share of records much later, and how late.
    very_late_share: float = 0.003
    very_late_ms: tuple[int, int] = (30_000, 180_000)

    @property
    def max_lateness_ms(self) -> int:
        return max(self.late_ms[1], self.very_late_ms[1])


NO_DISORDER = Disorder(late_share=0.0, very_late_share=0.0)


class VirtualClock:
    """Milliseconds since the epoch as a function of the record's position in the stream."""

    __slots__ = ("_step", "start_ms")

    def __init__(self, start_ms: int, pace: float) -> None:
        self.start_ms = start_ms
        self._step = 1000.0 / pace

    def at(self, index: int) -> int:
        """The on-time event time of the ``index``-th record."""
        return self.start_ms + int(index * self._step)

    def index_after(self, start_index: int, delay_ms: float) -> int:
        """The first position at least ``delay_ms`` after position ``start_index``."""
        return start_index + max(1, -int(-delay_ms // self._step))


class LatenessSampler:
    """Decides, record by record, how late it arrives (0 for most)."""

    __slots__ = ("_disorder", "_late_below", "_rng", "_very_late_below")

    def __init__(self, rng: random.Random, disorder: Disorder) -> None:
        self._rng = rng
        self._disorder = disorder
        self._very_late_below = disorder.very_late_share
        self._late_below = disorder.very_late_share + disorder.late_share

    def draw(self) -> int:
        u = self._rng.random()
        if u >= self._late_below:
            return 0
        low, high = (
            self._disorder.very_late_ms if u < self._very_late_below else self._disorder.late_ms
        )
        return self._rng.randint(low, high)


#: Records per second of event time when neither --event-rate nor a slower --rate says otherwise.
DEFAULT_PACE = 200.0


def effective_pace(event_rate: float | None, rate: float) -> float:
    """Records per second of event time.

    An explicit ``event_rate`` wins. Otherwise a rate-limited run keeps step with the wall clock
    up to DEFAULT_PACE; faster sending compresses time instead of crowding the population (a
    population of realistic size cannot do thousands of purchases a second without bursts).
    """
    if event_rate is not None:
        return event_rate
    return min(rate, DEFAULT_PACE) if rate > 0 else DEFAULT_PACE


def default_start_ms(now_ms: int, count: int, pace: float, rate: float) -> int:
    """Where the virtual clock starts when the user did not fix it: as late as possible.

    When the event clock runs faster than records are sent (or sending is unlimited) a run that
    started now would end in the future, and records more than a few minutes ahead are rejected
    by the ingest. Shifting the start back by the difference makes the last record land about
    when it is sent; a clock that is not faster than sending simply starts now.
    """
    event_span_ms = count * 1000.0 / pace
    wall_span_ms = count * 1000.0 / rate if rate > 0 else 0.0
    return now_ms - int(max(0.0, event_span_ms - wall_span_ms))
