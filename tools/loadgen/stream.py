"""The seeded, deterministic stream: ordinary traffic, invalid records and planted fraud.

``generate(config)`` yields ``GeneratedRecord``s: ``(topic_suffix, key, value, meta)``. Nothing in
it reads the wall clock or iterates over a hash-ordered set, so the same config gives the same bytes
on every machine and every run. Per position it emits, in priority order, a planted record whose
turn has come, else (by chance) an invalid record, the start of a new fraud pattern, or an
ordinary record.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import random
from collections.abc import Iterator

from tools.loadgen.activity import ActivityModel, BurstGuard
from tools.loadgen.config import StreamConfig
from tools.loadgen.event_time import LatenessSampler, VirtualClock
from tools.loadgen.fraud import FraudPlanner, Scheduled
from tools.loadgen.generated import GeneratedRecord, RecordMeta
from tools.loadgen.malformed import MalformedMaker
from tools.loadgen.population import build_population
from tools.loadgen.valid_records import RECORD_TYPES, TRANSACTIONS, RecordFactory, encode

#: Share of invalid records that still carry the customer's key (the sender knew who it was).
KEYED_INVALID_SHARE = 0.85


def generate(config: StreamConfig) -> Iterator[GeneratedRecord]:
    """The stream described by ``config``, one record at a time (``config.count`` in all)."""
    return _Stream(config).records()


class _Stream:
    """State of one pass over the stream: who did what when, and what is still to be planted."""

    def __init__(self, config: StreamConfig) -> None:
        self._config = config
        population = build_population(config.seed, config.customers, config.merchants)
        self._customers = population.customers
        self._keys = [c.customer_id.encode() for c in population.customers]
        rng = random.Random(f"loadgen/stream/{config.seed}")
        self._rng = rng
        self._clock = VirtualClock(config.start_time_ms, config.event_rate)
        self._factory = RecordFactory(rng, population)
        self._activity = ActivityModel(rng, config.customers)
        self._guard = BurstGuard(
            config.rules.velocity_count,
            config.rules.velocity_window_ms,
            config.disorder.max_lateness_ms,
        )
        self._history = {t: [0] * config.customers for t in RECORD_TYPES}
        self._lateness = LatenessSampler(rng, config.disorder)
        self._malformed = MalformedMaker(rng, config.max_record_bytes)
        self._planner = FraudPlanner(
            rng=rng,
            population=population,
            factory=self._factory,
            activity=self._activity,
            guard=self._guard,
            history=self._history,
            clock=self._clock,
            rules=config.rules,
            patterns=config.patterns,
            types=config.types,
            max_lateness_ms=config.disorder.max_lateness_ms,
        )
        self._types = config.types
        self._type_cdf = list(itertools.accumulate(config.type_weights.values()))
        self._pending: list[Scheduled] = []

    def records(self) -> Iterator[GeneratedRecord]:
        config = self._config
        rng = self._rng
        clock = self._clock
        pending = self._pending
        invalid_below = config.invalid_share
        plant_below = invalid_below + config.fraud_share / self._planner.mean_pattern_size
        velocity_count = config.rules.velocity_count
        for index in range(config.count):
            now = clock.at(index)
            if pending and pending[0].position <= index:
                yield self._planted(heapq.heappop(pending), index, now)
                continue
            u = rng.random()
            if u < invalid_below:
                yield self._invalid(index, now, self._record_type())
                continue
            if u < plant_below:
                last_index = config.count - 1 - len(pending) - velocity_count
                plan = self._planner.plan(index, now, last_index)
                if plan:
                    for scheduled in plan:
                        heapq.heappush(pending, scheduled)
                    yield self._planted(heapq.heappop(pending), index, now)
                    continue
            yield self._ordinary(index, now, self._record_type())

    def _record_type(self) -> str:
        cdf = self._type_cdf
        return self._types[bisect.bisect_right(cdf, self._rng.random() * cdf[-1])]

    def _ordinary(self, index: int, now: int, record_type: str) -> GeneratedRecord:
        lateness = self._lateness.draw()
        event_time = now - lateness
        if record_type == TRANSACTIONS:
            customer = self._activity.draw_allowed(self._guard, event_time, now)
            self._guard.record(customer, event_time)
        else:
            customer = self._activity.draw()
        self._history[record_type][customer] += 1
        person = self._customers[customer]
        record = self._factory.build(record_type, person, event_time)
        meta = RecordMeta(
            index, record_type, record["record_id"], person.customer_id, event_time, lateness
        )
        return GeneratedRecord(record_type, self._keys[customer], encode(record), meta)

    def _invalid(self, index: int, now: int, record_type: str) -> GeneratedRecord:
        customer = self._activity.draw()
        person = self._customers[customer]
        record = self._factory.build(record_type, person, now)
        kind, broken = self._malformed.make(record_type, record)
        keyed = broken.customer_intact and self._rng.random() < KEYED_INVALID_SHARE
        record_id = record["record_id"]
        meta = RecordMeta(
            index,
            record_type,
            record_id if record_id.encode() in broken.value else None,
            person.customer_id if broken.customer_intact else None,
            None,
            invalid_kind=kind,
            invalid_detail=broken.detail,
        )
        return GeneratedRecord(
            record_type, self._keys[customer] if keyed else None, broken.value, meta
        )

    def _planted(self, scheduled: Scheduled, index: int, now: int) -> GeneratedRecord:
        emission = scheduled.build(now)
        if emission.record_type == TRANSACTIONS:
            self._guard.record(emission.customer, now)
        self._history[emission.record_type][emission.customer] += 1
        record = emission.record
        meta = RecordMeta(
            index,
            emission.record_type,
            record["record_id"],
            record["customer_id"],
            now,
            pattern_id=emission.pattern_id,
            alerts=emission.alerts,
        )
        return GeneratedRecord(
            emission.record_type, self._keys[emission.customer], encode(record), meta
        )
