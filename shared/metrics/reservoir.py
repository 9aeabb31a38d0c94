"""Dropwizard's ``ExponentiallyDecayingReservoir``: a sample of 1028 values biased to the last
five minutes or so, by forward-decay priority sampling (Cormode et al., 2009).

Why this and not an HDR histogram: the aggregator and InfluxDB want what Dropwizard users know
(recent percentiles with bounded memory and no configured value range: delays may be negative
under clock skew, durations span microseconds to minutes), and the snapshot is cheap to make.
The price is sampling error in the tails (p999 from 1028 samples is an estimate), accepted for
the same reason Dropwizard accepts it.

Each update gets the weight ``exp(alpha * (t - start))`` (``t`` in seconds) and the priority
``weight / u`` with ``u`` uniform in (0, 1]; the reservoir keeps the ``size`` samples of highest
priority in a min-heap, so a full reservoir replaces its lowest priority when a new sample
beats it. Weights grow exponentially, so once an hour the start moves to now and every weight
and priority is scaled down by the same factor (which changes no statistic).

Two deliberate differences from Dropwizard: ``t`` is the monotonic tick clock in fractional
seconds (Dropwizard truncates wall-clock time to whole seconds), and only updates rescale (a
snapshot never does: statistics do not depend on the scale), so a reader never rewrites the
heap under the writer.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Iterable
from heapq import heapify, heappush, heapreplace

from shared.metrics.clock import Clock
from shared.metrics.weighted_snapshot import WeightedSnapshot

DEFAULT_SIZE = 1028
#: Dropwizard's default: a mean lifetime of 1 / 0.015 s, about 67 s; most weight in ~5 min.
DEFAULT_ALPHA = 0.015
RESCALE_INTERVAL_S = 3600.0

_Sample = tuple[float, float, float]


class ExponentiallyDecayingReservoir:
    """A bounded, recency-biased sample of the values a histogram saw.

    Thread safety without a lock per update: under the GIL each heap operation is one C call,
    so a reader copying the heap never sees it half-changed. The start time and the heap it
    weighs against form one tuple (the *epoch*), replaced whole by a rescale, so an update always
    pairs a weight with the heap of its own scale; with several writers, a sample offered while
    another thread rescales may land in the old heap and be dropped, never mis-weighted. A lock
    keeps two rescales from interleaving.
    """

    __slots__ = (
        "_alpha",
        "_clock",
        "_epoch",
        "_lock",
        "_next_rescale",
        "_random",
        "_size",
    )

    def __init__(
        self,
        size: int = DEFAULT_SIZE,
        alpha: float = DEFAULT_ALPHA,
        clock: Clock = time.monotonic,
        rand: random.Random | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"a reservoir holds at least one sample, got size={size}")
        self._size = size
        self._alpha = alpha
        self._clock = clock
        self._random = (rand or random.Random()).random
        start = clock()
        #: (start, heap of (priority, value, weight)); heap[0] is the sample to evict first.
        self._epoch: tuple[float, list[_Sample]] = (start, [])
        self._lock = threading.Lock()
        self._next_rescale = start + RESCALE_INTERVAL_S

    def update(self, value: float, now: float | None = None) -> None:
        """Offer ``value`` observed at ``now`` (default: the clock's now)."""
        if now is None:
            now = self._clock()
        if now >= self._next_rescale:
            self._rescale(now)
        start, heap = self._epoch
        weight = math.exp(self._alpha * (now - start))
        priority = weight / (1.0 - self._random())
        if len(heap) < self._size:
            heappush(heap, (priority, value, weight))
        elif priority > heap[0][0]:
            heapreplace(heap, (priority, value, weight))

    def update_many(self, values: Iterable[float], now: float | None = None) -> int:
        """Offer several values observed at the same moment (one clock read, one weight);
        returns how many there were."""
        if now is None:
            now = self._clock()
        if now >= self._next_rescale:
            self._rescale(now)
        start, heap = self._epoch
        weight = math.exp(self._alpha * (now - start))
        rand, size = self._random, self._size
        offered = 0
        for value in values:
            offered += 1
            priority = weight / (1.0 - rand())
            if len(heap) < size:
                heappush(heap, (priority, value, weight))
            elif priority > heap[0][0]:
                heapreplace(heap, (priority, value, weight))
        return offered

    def __len__(self) -> int:
        return len(self._epoch[1])

    def snapshot(self) -> WeightedSnapshot:
        """Statistics of the samples held now."""
        heap = list(self._epoch[1])  # one C call: a consistent copy under the GIL
        return WeightedSnapshot((value, weight) for _, value, weight in heap)

    def _rescale(self, now: float) -> None:
        """Move the start to ``now``, scaling weights and priorities down alike (Dropwizard)."""
        with self._lock:
            if now < self._next_rescale:  # another writer did it meanwhile
                return
            start, heap = self._epoch
            factor = math.exp(-self._alpha * (now - start))
            rescaled = [
                (priority * factor, value, weight * factor)
                for priority, value, weight in list(heap)
                if weight * factor != 0.0
            ]
            heapify(rescaled)  # scaling keeps the order, dropping underflowed ones may not
            self._epoch = (now, rescaled)
            self._next_rescale = now + RESCALE_INTERVAL_S
