"""Timer: a meter of how often something happens plus a histogram of how long it takes, in ms.

Durations come from the monotonic tick clock, so wall-clock jumps never produce negative or
absurd times; a negative duration handed in explicitly is ignored, as Dropwizard does.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from types import TracebackType
from typing import ClassVar, ParamSpec, TypeVar

from shared.metrics.clock import Clock
from shared.metrics.histogram import Histogram, HistogramSnapshot
from shared.metrics.meter import Meter, MeterRates

P = ParamSpec("P")
R = TypeVar("R")

#: Unit of every duration a timer reports.
DURATION_UNIT = "ms"


class Timer:
    """Durations in milliseconds: their rate (a meter) and distribution (a histogram).

    Thread safety: as for its meter and histogram, one writer thread per timer plus readers;
    :meth:`time` contexts are independent objects, so timing itself is per call.
    """

    __slots__ = ("_clock", "_histogram", "_meter")
    TYPE: ClassVar[str] = "TIMER"

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._meter = Meter(clock)
        self._histogram = Histogram(clock)

    def update_ms(self, ms: float) -> None:
        """Record one duration of ``ms`` milliseconds (ignored if negative)."""
        if ms >= 0:
            now = self._clock()
            self._meter.mark_at(now)
            self._histogram.update_at(now, ms)

    def update_ns(self, ns: int) -> None:
        """Record one duration of ``ns`` nanoseconds (e.g. a ``perf_counter_ns`` difference)."""
        if ns >= 0:
            now = self._clock()
            self._meter.mark_at(now)
            self._histogram.update_at(now, ns / 1e6)

    def update_many_ns(self, durations_ns: list[int]) -> None:
        """Record a batch of durations observed now, in nanoseconds: one clock read, one meter
        mark and one reservoir weight for all of them (a per-record :meth:`update_ns` costs the
        detector runtime about a microsecond a record). Negative ones are ignored."""
        kept = [ns / 1e6 for ns in durations_ns if ns >= 0]
        if kept:
            now = self._clock()
            self._meter.mark_at(now, len(kept))
            self._histogram.update_many_at(now, kept)

    def time(self) -> Timing:
        """``with timer.time(): ...`` records how long the block took (also when it raises)."""
        return Timing(self)

    def decorate(self, fn: Callable[P, R]) -> Callable[P, R]:
        """``@timer.decorate``: every call of ``fn`` is timed."""

        @functools.wraps(fn)
        def timed(*args: P.args, **kwargs: P.kwargs) -> R:
            with Timing(self):
                return fn(*args, **kwargs)

        return timed

    timed = decorate

    @property
    def count(self) -> int:
        return self._meter.count

    def rates(self) -> MeterRates:
        return self._meter.rates()

    def snapshot(self) -> HistogramSnapshot:
        """The durations' statistics, ms."""
        return self._histogram.snapshot()

    def __repr__(self) -> str:
        return f"Timer(count={self.count})"


class Timing:
    """One running measurement: a context manager, or call :meth:`stop` yourself."""

    __slots__ = ("_start", "_stopped", "_timer")

    def __init__(self, timer: Timer) -> None:
        self._timer = timer
        self._stopped = False
        self._start = timer._clock()

    def __enter__(self) -> Timing:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> float:
        """Record the time since the start, once; returns it in ms (later calls record nothing)."""
        timer = self._timer
        now = timer._clock()
        elapsed_ms = (now - self._start) * 1000.0
        if not self._stopped:
            self._stopped = True
            if elapsed_ms >= 0:
                timer._meter.mark_at(now)
                timer._histogram.update_at(now, elapsed_ms)
        return elapsed_ms
