"""MetricRegistry: one instance's metrics by name and tags, and their snapshots.

A registry belongs to one service instance (its ``service`` and ``instance_id``) and carries
common tags (``detector=velocity``) that every snapshot includes but keys leave out. Getting a
metric creates it on first use and returns the same object afterwards, so code that needs a
metric simply asks for it; a name keeps one type for the life of the registry, whatever its
tags, because one InfluxDB measurement cannot be a counter and a timer at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from shared.metrics.clock import Clock
from shared.metrics.counter import Counter
from shared.metrics.gauge import Gauge, GaugeFn
from shared.metrics.histogram import Histogram
from shared.metrics.keys import (
    TagItems,
    check_instance_id,
    check_name,
    metric_key,
    snapshot_key,
    tag_items,
)
from shared.metrics.meter import Meter
from shared.metrics.snapshot import TYPES, Metric, Snapshot, snapshot
from shared.metrics.timer import Timer

M = TypeVar("M", Counter, Meter, Histogram, Timer, Gauge)


@dataclass(frozen=True, slots=True)
class Registered:
    """One metric of the registry, with everything its snapshots need precomputed."""

    name: str
    #: The metric's own tags (those not identical to a common tag).
    own_tags: TagItems
    #: Common tags merged with the metric's own (the metric's win): what snapshots carry.
    tags: Mapping[str, str]
    key: str
    metric: Metric


class MetricRegistry:
    """The metrics of one service instance.

    ``clock`` gives snapshot timestamps (epoch seconds). ``tick`` drives rates, decay and
    durations and should be monotonic; by default it is ``time.monotonic``, or ``clock`` itself
    when a custom clock is given, so that one fake clock drives a whole test.
    """

    def __init__(
        self,
        service: str,
        instance_id: str,
        tags: Mapping[str, str] | None = None,
        clock: Clock = time.time,
        tick: Clock | None = None,
    ) -> None:
        if not service:
            raise ValueError("a registry needs its service name, e.g. detector.velocity")
        self.service = service
        self.instance_id = check_instance_id(instance_id)
        self.tags: dict[str, str] = dict(tag_items(tags))
        self.clock = clock
        self.tick = tick or (time.monotonic if clock is time.time else clock)
        self._lock = threading.Lock()
        self._metrics: dict[tuple[str, TagItems], Registered] = {}
        self._types: dict[str, str] = {}
        self._by_id: dict[int, Registered] = {}

    def counter(self, name: str, tags: Mapping[str, str] | None = None) -> Counter:
        return self._get_or_create(Counter, name, tags, Counter)

    def meter(self, name: str, tags: Mapping[str, str] | None = None) -> Meter:
        return self._get_or_create(Meter, name, tags, lambda: Meter(self.tick))

    def histogram(self, name: str, tags: Mapping[str, str] | None = None) -> Histogram:
        return self._get_or_create(Histogram, name, tags, lambda: Histogram(self.tick))

    def timer(self, name: str, tags: Mapping[str, str] | None = None) -> Timer:
        return self._get_or_create(Timer, name, tags, lambda: Timer(self.tick))

    def gauge(self, name: str, fn: GaugeFn, tags: Mapping[str, str] | None = None) -> Gauge:
        """The gauge ``name`` reading ``fn``. Registering it again replaces the function (a
        component re-created after a rebalance re-registers its gauge and must not leave the
        old one reading a dead object)."""
        gauge = self._get_or_create(Gauge, name, tags, lambda: Gauge(fn))
        gauge.fn = fn
        return gauge

    def remove(self, name: str, tags: Mapping[str, str] | None = None) -> bool:
        """Forget a metric (its last snapshot stays on the compacted topic); True if it existed."""
        with self._lock:
            entry = self._metrics.pop((name, self._own(tags)), None)
            if entry is None:
                return False
            del self._by_id[id(entry.metric)]
            if not any(n == name for n, _ in self._metrics):
                del self._types[name]
            return True

    def __iter__(self) -> Iterator[Registered]:
        with self._lock:
            return iter(list(self._metrics.values()))

    def __len__(self) -> int:
        return len(self._metrics)

    def key(self, metric: Metric) -> str:
        """The Kafka key of a metric of this registry."""
        entry = self._by_id.get(id(metric))
        if entry is None or entry.metric is not metric:
            raise ValueError(f"{metric!r} is not a metric of this registry")
        return entry.key

    def snapshot_key(self, record: Mapping[str, Any]) -> str:
        """The Kafka key of a snapshot record of this registry."""
        return snapshot_key(record, self.tags)

    def snapshot_items(
        self, now_ms: int | None = None, types: Collection[str] | None = None
    ) -> list[tuple[str, Snapshot]]:
        """``(key, record)`` for every metric (of ``types`` only, if given), taken at ``now_ms``."""
        wanted = TYPES if types is None else _check_types(types)
        timestamp = int(self.clock() * 1000) if now_ms is None else int(now_ms)
        out: list[tuple[str, Snapshot]] = []
        for entry in self:
            if entry.metric.TYPE not in wanted:
                continue
            record = snapshot(
                entry.metric,
                instance_id=self.instance_id,
                service=self.service,
                name=entry.name,
                tags=entry.tags,
                timestamp_ms=timestamp,
            )
            if record is not None:
                out.append((entry.key, record))
        return out

    def snapshots(
        self, now_ms: int | None = None, types: Collection[str] | None = None
    ) -> list[Snapshot]:
        """One MetricSnapshot record per metric (gauges without a value are left out)."""
        return [record for _, record in self.snapshot_items(now_ms, types)]

    def _own(self, tags: Mapping[str, str] | None) -> TagItems:
        """A metric's own tags: those not already common to the registry."""
        return tuple((k, v) for k, v in tag_items(tags) if self.tags.get(k) != v)

    def _get_or_create(
        self, kind: type[M], name: str, tags: Mapping[str, str] | None, create: Callable[[], M]
    ) -> M:
        own = self._own(tags)
        entry = self._metrics.get((name, own))
        if entry is None:
            with self._lock:
                entry = self._metrics.get((name, own))
                if entry is None:
                    entry = self._register(kind, name, own, create)
        metric = entry.metric
        if not isinstance(metric, kind):
            raise _wrong_type(name, metric.TYPE, kind.TYPE)
        return metric

    def _register(
        self, kind: type[M], name: str, own: TagItems, create: Callable[[], M]
    ) -> Registered:
        check_name(name)
        existing = self._types.get(name)
        if existing is not None and existing != kind.TYPE:
            raise _wrong_type(name, existing, kind.TYPE)
        entry = Registered(
            name=name,
            own_tags=own,
            tags={**self.tags, **dict(own)},
            key=metric_key(self.instance_id, name, own),
            metric=create(),
        )
        self._metrics[(name, own)] = entry
        self._types[name] = kind.TYPE
        self._by_id[id(entry.metric)] = entry
        return entry


def _wrong_type(name: str, existing: str, wanted: str) -> ValueError:
    return ValueError(
        f"metric {name!r} is a {existing.lower()}, not a {wanted.lower()}; "
        "pick another name for the new metric"
    )


def _check_types(types: Collection[str]) -> frozenset[str]:
    wanted = frozenset(types)
    unknown = wanted - TYPES
    if unknown:
        raise ValueError(
            f"unknown metric type(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(TYPES))}"
        )
    return wanted
