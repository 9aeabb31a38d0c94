"""Planted fraud: valid records arranged so that one reference detector must alert.

Three patterns, one per reference detector:

- ``large_amount``: one purchase far above its currency's threshold;
- ``velocity``: exactly ``velocity_count`` purchases by one otherwise quiet customer within
  half a window, so the last of them is the one that completes the burst;
- ``new_country``: a purchase or login from abroad by a customer with an established history at
  home.

Each pattern trips exactly one detector: large amounts are made at home by customers the burst
guard allows, bursts are ordinary amounts at home, and the trip abroad is an ordinary amount.
Planted records are on time (no disorder), so "which record completes the pattern" does not
depend on how a detector treats late data.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from tools.loadgen.activity import ActivityModel, BurstGuard
from tools.loadgen.event_time import VirtualClock
from tools.loadgen.generated import PlantedAlert
from tools.loadgen.geography import COUNTRIES, LARGE_AMOUNT_THRESHOLDS, Country
from tools.loadgen.population import Population
from tools.loadgen.valid_records import LOGINS, TRANSACTIONS, RecordFactory

LARGE_AMOUNT = "large_amount"
VELOCITY = "velocity"
NEW_COUNTRY = "new_country"
#: Pattern name -> relative frequency among planted patterns.
PATTERN_WEIGHTS: dict[str, float] = {LARGE_AMOUNT: 0.4, VELOCITY: 0.3, NEW_COUNTRY: 0.3}
PATTERNS: tuple[str, ...] = tuple(PATTERN_WEIGHTS)
#: Rule names in the ground truth, one per detector.
RULES: dict[str, str] = {
    LARGE_AMOUNT: "amount_above_currency_threshold",
    VELOCITY: "transactions_per_window",
    NEW_COUNTRY: "first_time_country",
}
#: Zipf draws to try when looking for a customer that fits a pattern before giving up for now.
_CANDIDATE_TRIES = 16
#: Share of planted ``new_country`` records that are transactions (the rest are logins).
_NEW_COUNTRY_TRANSACTION_SHARE = 0.6


@dataclass(frozen=True, slots=True)
class FraudRules:
    """The parameters the reference detectors are expected to use."""

    velocity_count: int = 5
    velocity_window_ms: int = 60_000
    #: Records of a type at home before a first record abroad counts as "new country".
    new_country_min_history: int = 3


@dataclass(frozen=True, slots=True)
class Emission:
    """A planted record, built when its turn in the stream comes."""

    record_type: str
    record: dict[str, Any]
    customer: int
    pattern_id: str
    alerts: tuple[PlantedAlert, ...] = ()


#: Builds a planted record given its event time (known only when its turn comes).
Builder = Callable[[int], Emission]


class Scheduled(NamedTuple):
    """A planted record waiting for its turn; ordered by (position, seq) in a heap."""

    position: int
    seq: int
    build: Builder


class FraudPlanner:
    """Chooses pattern, customer and timing; the stream emits what it schedules."""

    def __init__(
        self,
        *,
        rng: random.Random,
        population: Population,
        factory: RecordFactory,
        activity: ActivityModel,
        guard: BurstGuard,
        history: dict[str, list[int]],
        clock: VirtualClock,
        rules: FraudRules,
        patterns: tuple[str, ...],
        types: tuple[str, ...],
        max_lateness_ms: int,
    ) -> None:
        self._rng = rng
        self._population = population
        self._factory = factory
        self._activity = activity
        self._guard = guard
        self._history = history
        self._clock = clock
        self.rules = rules
        self._types = types
        self._max_lateness_ms = max_lateness_ms
        self._patterns = tuple(p for p in patterns if p == NEW_COUNTRY or TRANSACTIONS in types)
        self._pattern_cdf = list(itertools.accumulate(PATTERN_WEIGHTS[p] for p in self._patterns))
        self._abroad_done: set[int] = set()
        self._seq = itertools.count()
        self._pattern_numbers = itertools.count(1)

    @property
    def mean_pattern_size(self) -> float:
        """Records per planted pattern on average (to turn a record share into a start rate)."""
        if not self._patterns:
            return 1.0
        sizes = {LARGE_AMOUNT: 1, VELOCITY: self.rules.velocity_count, NEW_COUNTRY: 1}
        total = sum(PATTERN_WEIGHTS[p] for p in self._patterns)
        return sum(PATTERN_WEIGHTS[p] * sizes[p] for p in self._patterns) / total

    def plan(self, index: int, now_ms: int, last_index: int) -> list[Scheduled] | None:
        """Plant a pattern starting at ``index``, or None if no customer fits one right now."""
        if not self._patterns:
            return None
        pattern = self._patterns[
            bisect.bisect_right(self._pattern_cdf, self._rng.random() * self._pattern_cdf[-1])
        ]
        if pattern == LARGE_AMOUNT:
            return self._large_amount(index, now_ms)
        if pattern == VELOCITY:
            return self._velocity(index, now_ms, last_index)
        return self._new_country(index, now_ms)

    def _pattern_id(self, pattern: str) -> str:
        return f"{pattern}-{next(self._pattern_numbers):06d}"

    def _schedule(self, index: int, build: Builder) -> Scheduled:
        return Scheduled(index, next(self._seq), build)

    def _large_amount(self, index: int, now_ms: int) -> list[Scheduled] | None:
        customer = self._activity.draw_allowed(self._guard, now_ms, now_ms)
        person = self._population.customers[customer]
        pattern_id = self._pattern_id(LARGE_AMOUNT)
        currency = person.country.currency

        def build(event_time: int) -> Emission:
            amount = self._factory.amounts.large(currency)
            record = self._factory.transaction(person, event_time, amount=amount)
            threshold = LARGE_AMOUNT_THRESHOLDS[currency]
            details = {"amount": amount, "currency": currency, "threshold": threshold}
            alert = PlantedAlert(
                LARGE_AMOUNT, RULES[LARGE_AMOUNT], person.customer_id, pattern_id, details
            )
            return Emission(TRANSACTIONS, record, customer, pattern_id, (alert,))

        return [self._schedule(index, build)]

    def _velocity(self, index: int, now_ms: int, last_index: int) -> list[Scheduled] | None:
        rules = self.rules
        window = rules.velocity_window_ms
        customer = self._find(lambda c: self._guard.is_quiet(c, now_ms, 2 * window))
        if customer is None:
            return None
        positions = self._burst_positions(index, last_index)
        if positions is None:
            return None
        person = self._population.customers[customer]
        pattern_id = self._pattern_id(VELOCITY)
        # Nobody else may touch this customer until the burst is over and out of every window
        # (one window more than needed covers records delayed by others due at the same time).
        until = self._clock.at(positions[-1]) + 3 * window + self._max_lateness_ms
        self._guard.reserve(customer, until)
        members: list[tuple[str, int]] = []

        def build(event_time: int) -> Emission:
            record = self._factory.transaction(person, event_time)
            members.append((record["record_id"], event_time))
            if len(members) < rules.velocity_count:
                return Emission(TRANSACTIONS, record, customer, pattern_id)
            details = {
                "count": rules.velocity_count,
                "window_ms": window,
                "first_event_time": members[0][1],
                "span_ms": event_time - members[0][1],
                "record_ids": [record_id for record_id, _ in members],
            }
            alert = PlantedAlert(VELOCITY, RULES[VELOCITY], person.customer_id, pattern_id, details)
            return Emission(TRANSACTIONS, record, customer, pattern_id, (alert,))

        return [self._schedule(position, build) for position in positions]

    def _burst_positions(self, index: int, last_index: int) -> list[int] | None:
        """Stream positions of the burst: gaps of 1-8 s, the whole within half a window.

        Squeezed into fewer positions when the stream ends sooner; None if it cannot fit.
        """
        count = self.rules.velocity_count
        gaps_ms = [self._rng.uniform(1_000, 8_000) for _ in range(count - 1)]
        budget_ms = self.rules.velocity_window_ms / 2
        scale = min(1.0, budget_ms / sum(gaps_ms))
        gaps = [self._clock.index_after(0, gap * scale) for gap in gaps_ms]
        room = last_index - index
        if sum(gaps) > room:
            gaps = [max(1, gap * room // sum(gaps)) for gap in gaps]
            if sum(gaps) > room:
                return None
        return list(itertools.accumulate(gaps, initial=index))

    def _new_country(self, index: int, now_ms: int) -> list[Scheduled] | None:
        record_type = self._new_country_type()
        history = self._history[record_type]
        minimum = self.rules.new_country_min_history
        guard = self._guard

        def fits(c: int) -> bool:
            if c in self._abroad_done or history[c] < minimum:
                return False
            if record_type == TRANSACTIONS:
                return guard.allows(c, now_ms, now_ms)
            return not guard.is_reserved(c, now_ms)

        customer = self._find(fits)
        if customer is None:
            return None
        self._abroad_done.add(customer)
        person = self._population.customers[customer]
        abroad = self._foreign_country(person.country)
        pattern_id = self._pattern_id(NEW_COUNTRY)
        seen_at_home = history[customer]

        def build(event_time: int) -> Emission:
            if record_type == TRANSACTIONS:
                record = self._factory.transaction(person, event_time, country=abroad)
            else:
                record = self._factory.login(person, event_time, country=abroad)
            details = {
                "country": abroad.code,
                "home_country": person.country.code,
                "history": seen_at_home,
            }
            alert = PlantedAlert(
                NEW_COUNTRY, RULES[NEW_COUNTRY], person.customer_id, pattern_id, details
            )
            return Emission(record_type, record, customer, pattern_id, (alert,))

        return [self._schedule(index, build)]

    def _new_country_type(self) -> str:
        if LOGINS not in self._types:
            return TRANSACTIONS
        if TRANSACTIONS not in self._types:
            return LOGINS
        return TRANSACTIONS if self._rng.random() < _NEW_COUNTRY_TRANSACTION_SHARE else LOGINS

    def _find(self, fits: Callable[[int], bool]) -> int | None:
        """An active customer (Zipf draw) that fits, or None after a few tries."""
        for _ in range(_CANDIDATE_TRIES):
            customer = self._activity.draw()
            if fits(customer):
                return customer
        return None

    def _foreign_country(self, home: Country) -> Country:
        while True:
            country = COUNTRIES[int(self._rng.random() * len(COUNTRIES))]
            if country.code != home.code:
                return country
