"""Who acts next: Zipf-like customer activity that never forms a burst by accident.

A few customers shop a lot and most rarely, so customers are drawn from a Zipf-Mandelbrot law.
Left alone, the busiest ones would do five purchases in a minute and the ``velocity`` detector
would alert on ordinary traffic that the ground truth does not list. ``BurstGuard`` remembers each
customer's recent transaction times and refuses a pick that could put ``velocity_count`` of them
in one window, so only the planted bursts can.
"""

from __future__ import annotations

import bisect
import itertools
import random

from tools.loadgen.errors import PopulationTooSmallError

#: Zipf-Mandelbrot law: weight of the customer of rank k is 1 / (k + OFFSET) ** EXPONENT.
EXPONENT = 1.1
OFFSET = 10.0
#: Zipf draws to try before falling back to scanning for any customer the guard allows.
ZIPF_TRIES = 8


class BurstGuard:
    """Keeps every customer's ordinary transactions below ``count`` per ``window_ms``.

    A transaction at time t is allowed when at most ``count - 2`` others lie within
    ``(t - window, t + window)``: then every window containing t holds at most ``count - 1``.
    """

    __slots__ = ("_count", "_horizon_ms", "_recent", "_reserved", "_window_ms")

    def __init__(self, count: int, window_ms: int, max_lateness_ms: int) -> None:
        self._count = count
        self._window_ms = window_ms
        #: Times older than ``now - horizon`` can no longer share a window with a new record.
        self._horizon_ms = window_ms + max_lateness_ms
        self._recent: dict[int, list[int]] = {}
        self._reserved: dict[int, int] = {}

    def allows(self, customer: int, event_time: int, now_ms: int) -> bool:
        """May ``customer`` transact at ``event_time`` (the clock reading ``now_ms``)?"""
        if self._reserved.get(customer, -1) >= now_ms:
            return False
        times = self._recent.get(customer)
        if not times:
            return True
        oldest_useful = now_ms - self._horizon_ms
        if times[0] < oldest_useful:
            times[:] = [t for t in times if t >= oldest_useful]
        low, high = event_time - self._window_ms, event_time + self._window_ms
        return sum(1 for t in times if low < t < high) <= self._count - 2

    def is_reserved(self, customer: int, now_ms: int) -> bool:
        return self._reserved.get(customer, -1) >= now_ms

    def is_quiet(self, customer: int, now_ms: int, margin_ms: int) -> bool:
        """No transaction of ``customer`` after ``now - margin`` and no reservation pending."""
        if self.is_reserved(customer, now_ms):
            return False
        times = self._recent.get(customer)
        return not times or max(times) <= now_ms - margin_ms

    def record(self, customer: int, event_time: int) -> None:
        self._recent.setdefault(customer, []).append(event_time)

    def reserve(self, customer: int, until_ms: int) -> None:
        """Keep ``customer`` out of every other pick until the clock passes ``until_ms``."""
        self._reserved[customer] = until_ms


class ActivityModel:
    """Draws the customer of the next record, heavy users far more often than light ones."""

    __slots__ = ("_cdf", "_rng", "_size", "_total")

    def __init__(self, rng: random.Random, customers: int) -> None:
        self._rng = rng
        self._size = customers
        self._cdf = list(
            itertools.accumulate((k + OFFSET) ** -EXPONENT for k in range(1, customers + 1))
        )
        self._total = self._cdf[-1]

    def draw(self) -> int:
        """Any customer, Zipf-distributed (for logins and records that will be invalid)."""
        return bisect.bisect_right(self._cdf, self._rng.random() * self._total)

    def draw_allowed(self, guard: BurstGuard, event_time: int, now_ms: int) -> int:
        """A Zipf-distributed customer whose transaction at ``event_time`` the guard allows."""
        for _ in range(ZIPF_TRIES):
            customer = self.draw()
            if guard.allows(customer, event_time, now_ms):
                return customer
        start = self._rng.randrange(self._size)
        for step in range(self._size):
            customer = (start + step) % self._size
            if guard.allows(customer, event_time, now_ms):
                return customer
        raise PopulationTooSmallError(
            "every customer has reached the velocity limit: raise --customers or lower --event-rate"
        )


def max_transaction_pace(customers: int, count: int, window_ms: int) -> float:
    """Transactions per second of event time a population absorbs without accidental bursts.

    The guard packs at most ``count - 1`` transactions per customer into two windows; half of
    that capacity keeps rejections (and so generation) cheap.
    """
    per_customer = (count - 1) / (2 * window_ms / 1000.0)
    return 0.5 * customers * per_customer
