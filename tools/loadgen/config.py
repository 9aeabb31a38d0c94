"""What to generate: one frozen, validated description of a stream.

Everything that shapes the bytes is here, and nothing else is: the same ``StreamConfig`` always
yields the same stream. Sending (rate, topics, progress) is the producer's business. Invalid values
raise ConfigError naming the ``mesh produce`` option that sets them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shared.errors import ConfigError
from tools.loadgen.activity import max_transaction_pace
from tools.loadgen.errors import PopulationTooSmallError
from tools.loadgen.event_time import DEFAULT_PACE, Disorder
from tools.loadgen.fraud import PATTERNS, FraudRules
from tools.loadgen.malformed import DEFAULT_MAX_RECORD_BYTES
from tools.loadgen.valid_records import RECORD_TYPES, TRANSACTIONS

#: Share of ordinary records of each type, when both are generated.
TYPE_WEIGHTS: dict[str, float] = {"transactions": 0.75, "logins": 0.25}
#: Smallest allowed record-size limit: below it, ordinary records would be "oversized" too.
MIN_RECORD_BYTES_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class StreamConfig:
    #: Epoch milliseconds of the first record's event time.
    start_time_ms: int
    count: int = 10_000
    seed: int = 42
    types: tuple[str, ...] = RECORD_TYPES
    invalid_share: float = 0.02
    #: Approximate share of records that belong to a planted fraud pattern.
    fraud_share: float = 0.005
    patterns: tuple[str, ...] = PATTERNS
    #: Records per second of event time.
    event_rate: float = DEFAULT_PACE
    customers: int = 20_000
    merchants: int = 2_000
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    disorder: Disorder = field(default_factory=Disorder)
    rules: FraudRules = field(default_factory=FraudRules)

    def __post_init__(self) -> None:
        _at_least("--count", self.count, 0)
        _at_least("--customers", self.customers, 1)
        _at_least("--merchants", self.merchants, 1)
        _at_least("--start-time", self.start_time_ms, 0)
        _at_least("--max-record-bytes", self.max_record_bytes, MIN_RECORD_BYTES_LIMIT)
        _share("--invalid-share", self.invalid_share)
        _share("--fraud-share", self.fraud_share)
        if self.invalid_share + self.fraud_share > 1:
            raise ConfigError(
                f"--invalid-share {self.invalid_share} plus --fraud-share {self.fraud_share} "
                "exceeds 1: lower one of them"
            )
        _known("record type", "--types", self.types, RECORD_TYPES)
        _known("fraud pattern", "--patterns", self.patterns, PATTERNS, allow_empty=True)
        if not (math.isfinite(self.event_rate) and self.event_rate > 0):
            raise ConfigError(
                f"--event-rate must be a positive number of records per second, "
                f"got {self.event_rate}"
            )
        self._check_population_carries_pace()

    @property
    def type_weights(self) -> dict[str, float]:
        return {t: TYPE_WEIGHTS[t] for t in self.types}

    def _check_population_carries_pace(self) -> None:
        if TRANSACTIONS not in self.types:
            return
        share = self.type_weights[TRANSACTIONS] / sum(self.type_weights.values())
        limit = max_transaction_pace(
            self.customers, self.rules.velocity_count, self.rules.velocity_window_ms
        )
        if share * self.event_rate > limit:
            needed = math.ceil(self.customers * share * self.event_rate / limit)
            raise PopulationTooSmallError(
                f"{self.customers} customers cannot make {self.event_rate:g} records per second "
                "of event time without accidental velocity bursts: pass --customers "
                f"{needed} or more, or a lower --event-rate"
            )


def _at_least(option: str, value: int, minimum: int) -> None:
    if not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{option} must be a whole number >= {minimum}, got {value!r}")


def _share(option: str, value: float) -> None:
    if not (isinstance(value, int | float) and 0 <= value <= 1):
        raise ConfigError(f"{option} must be a fraction between 0 and 1, got {value!r}")


def _known(
    what: str,
    option: str,
    values: tuple[str, ...],
    known: tuple[str, ...],
    *,
    allow_empty: bool = False,
) -> None:
    if not values and not allow_empty:
        raise ConfigError(f"{option} is empty: name at least one of {', '.join(known)}")
    for value in values:
        if value not in known:
            raise ConfigError(
                f"unknown {what} {value!r} in {option}: choose from {', '.join(known)}"
            )
