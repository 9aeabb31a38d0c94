"""A token bucket: an average rate with a small allowance for bursts.

``acquire()`` is called once per record. Tokens may go negative (a debt) and the caller then
waits the debt off, which keeps the long-run rate exact even when the wait function returns early
(as a producer's ``poll`` does when a delivery report arrives).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Debt small enough to ignore; without it float rounding could keep a caller waiting forever
#: for a few femtoseconds.
_TOLERANCE = 1e-6


class TokenBucket:
    __slots__ = ("_capacity", "_clock", "_last", "_rate", "_tokens", "_wait")

    def __init__(
        self,
        rate: float,
        *,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], object] = time.sleep,
    ) -> None:
        """``rate`` tokens per second (0 = unlimited); ``burst`` defaults to 50 ms worth."""
        self._rate = rate
        self._capacity = burst if burst is not None else max(1.0, rate / 20)
        self._tokens = self._capacity
        self._clock = clock
        self._wait = wait
        self._last = clock()

    def acquire(self) -> None:
        """Take one token, waiting as long as the rate requires."""
        if self._rate <= 0:
            return
        self._refill()
        self._tokens -= 1
        while self._tokens < -_TOLERANCE:
            self._wait(-self._tokens / self._rate)
            self._refill()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
        self._last = now
