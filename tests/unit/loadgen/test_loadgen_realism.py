"""Generated traffic looks like card traffic: heavy tails, many actors, consistent geography,
and event times that advance with some, bounded, disorder."""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from typing import Any

import pytest

from tools.loadgen import GeneratedRecord, StreamConfig
from tools.loadgen.event_time import (
    DEFAULT_PACE,
    LatenessSampler,
    VirtualClock,
    default_start_ms,
    effective_pace,
)


@pytest.fixture(scope="module")
def values(typical_stream: list[GeneratedRecord]) -> dict[str, list[dict[str, Any]]]:
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in typical_stream:
        if record.meta.is_valid:
            by_type[record.topic_suffix].append(json.loads(record.value))
    return by_type


def test_amounts_are_heavy_tailed(values: dict[str, list[dict[str, Any]]]) -> None:
    usd = [v["amount"] for v in values["transactions"] if v["currency"] == "USD"]
    median = statistics.median(usd)
    assert 10 < median < 60
    assert max(usd) / median > 100
    assert statistics.quantiles(usd, n=100)[98] / median > 10


def test_many_distinct_customers_merchants_countries_and_currencies(
    values: dict[str, list[dict[str, Any]]],
) -> None:
    transactions = values["transactions"]
    assert len({v["customer_id"] for v in transactions}) > 3_000
    assert len({v["merchant_id"] for v in transactions}) > 500
    assert len({v["country"] for v in transactions}) > 40
    assert len({v["currency"] for v in transactions}) > 30
    assert len({v["country"] for v in values["logins"]}) > 30


def test_customer_activity_is_skewed(values: dict[str, list[dict[str, Any]]]) -> None:
    per_customer = Counter(v["customer_id"] for v in values["transactions"])
    counts = sorted(per_customer.values(), reverse=True)
    top_percent = sum(counts[: len(counts) // 100])
    assert top_percent > 0.05 * sum(counts), "the busiest 1% do far more than 1% of purchases"


def test_each_country_pays_in_one_currency(values: dict[str, list[dict[str, Any]]]) -> None:
    currencies: dict[str, set[str]] = defaultdict(set)
    for v in values["transactions"]:
        currencies[v["country"]].add(v["currency"])
    assert all(len(c) == 1 for c in currencies.values()), currencies
    assert currencies["DE"] == currencies["FR"] == {"EUR"}
    assert currencies["JP"] == {"JPY"}


def test_zero_decimal_currencies_have_whole_amounts(
    values: dict[str, list[dict[str, Any]]],
) -> None:
    yen = [v["amount"] for v in values["transactions"] if v["currency"] == "JPY"]
    assert yen and all(isinstance(a, int) for a in yen)


def test_logins_mostly_succeed_from_the_customers_usual_devices(
    values: dict[str, list[dict[str, Any]]],
) -> None:
    logins = values["logins"]
    success = sum(v["success"] for v in logins) / len(logins)
    assert 0.85 < success < 0.99
    devices: dict[str, set[str]] = defaultdict(set)
    for v in logins:
        devices[v["customer_id"]].add(v["device_id"])
    assert max(len(d) for d in devices.values()) <= 4  # up to 3 own devices + 1 takeover


def test_event_times_advance_with_some_bounded_disorder(
    typical_stream: list[GeneratedRecord], typical_config: StreamConfig
) -> None:
    high_water = 0
    behind: list[int] = []
    for record in typical_stream:
        if record.meta.event_time is None:
            continue
        behind.append(max(0, high_water - record.meta.event_time))
        high_water = max(high_water, record.meta.event_time)
    late = [b for b in behind if b > 0]
    bound = typical_config.disorder.max_lateness_ms
    assert 0.03 < len(late) / len(behind) < 0.10, "a share of records arrive out of order"
    assert any(b > 30_000 for b in late), "a few arrive much later"
    assert max(behind) <= bound
    span = high_water - typical_config.start_time_ms
    expected_span = typical_config.count * 1000 / typical_config.event_rate
    assert abs(span - expected_span) < 1000


def test_lateness_sampler_mixes_on_time_a_little_late_and_much_later() -> None:
    import random

    from tools.loadgen.event_time import Disorder

    disorder = Disorder()
    sampler = LatenessSampler(random.Random(1), disorder)
    draws = [sampler.draw() for _ in range(100_000)]
    assert 0.94 < draws.count(0) / len(draws) < 0.95
    assert max(draws) <= disorder.max_lateness_ms
    assert sum(d >= disorder.very_late_ms[0] for d in draws) > 100


def test_virtual_clock_steps_by_the_pace() -> None:
    clock = VirtualClock(1_000, pace=4.0)
    assert [clock.at(i) for i in range(3)] == [1_000, 1_250, 1_500]
    assert clock.index_after(10, 600) == 13


def test_default_start_keeps_event_times_out_of_the_future() -> None:
    now = 10_000_000
    # paced by the wall clock: start now
    assert default_start_ms(now, count=1_000, pace=100.0, rate=100.0) == now
    # unlimited: end now
    assert default_start_ms(now, count=1_000, pace=100.0, rate=0.0) == now - 10_000
    # event clock twice as fast as sending: start early by the difference
    assert default_start_ms(now, count=1_000, pace=100.0, rate=200.0) == now - 5_000


def test_event_rate_follows_slow_send_rates_and_is_capped_otherwise() -> None:
    assert effective_pace(None, 50.0) == 50.0
    assert effective_pace(None, 50_000.0) == DEFAULT_PACE
    assert effective_pace(None, 0.0) == DEFAULT_PACE
    assert effective_pace(1_000.0, 5.0) == 1_000.0
