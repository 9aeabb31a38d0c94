"""Timer: durations in ms from the tick clock, counted and rated like a meter."""

from __future__ import annotations

import pytest
from metrics_fakes import FakeClock

from shared.metrics import Timer


def test_update_ns_and_update_ms_record_milliseconds(clock: FakeClock) -> None:
    timer = Timer(clock)
    timer.update_ns(2_500_000)
    timer.update_ms(7.5)
    snapshot = timer.snapshot()
    assert timer.count == 2
    assert (snapshot.min, snapshot.max) == (2.5, 7.5)


def test_update_many_ns_records_each_duration_like_update_ns(clock: FakeClock) -> None:
    one_by_one, batched = Timer(clock), Timer(clock)
    durations = [1_000_000, 4_000_000, 2_500_000, -3]
    for ns in durations:
        one_by_one.update_ns(ns)
    batched.update_many_ns(durations)
    assert batched.count == one_by_one.count == 3
    assert batched.snapshot() == one_by_one.snapshot()
    assert batched.rates() == one_by_one.rates()


def test_update_many_ns_of_nothing_records_nothing(clock: FakeClock) -> None:
    timer = Timer(clock)
    timer.update_many_ns([])
    timer.update_many_ns([-1])
    assert timer.count == 0
    assert timer.snapshot().samples == 0


def test_negative_durations_are_ignored(clock: FakeClock) -> None:
    timer = Timer(clock)
    timer.update_ms(-1.0)
    timer.update_ns(-5)
    assert timer.count == 0
    assert timer.snapshot().samples == 0


def test_time_context_measures_the_block(clock: FakeClock) -> None:
    timer = Timer(clock)
    with timer.time():
        clock.advance(0.25)
    assert timer.snapshot().max == pytest.approx(250.0)


def test_a_block_that_raises_is_still_timed(clock: FakeClock) -> None:
    timer = Timer(clock)
    with pytest.raises(RuntimeError), timer.time():
        clock.advance(0.01)
        raise RuntimeError("boom")
    assert timer.count == 1
    assert timer.snapshot().max == pytest.approx(10.0)


def test_decorated_functions_are_timed_and_keep_their_result(clock: FakeClock) -> None:
    timer = Timer(clock)

    @timer.decorate
    def work(x: int, *, y: int) -> int:
        """Doc."""
        clock.advance(0.002)
        return x + y

    assert work(1, y=2) == 3
    assert work(3, y=4) == 7
    assert work.__doc__ == "Doc."
    assert timer.count == 2
    assert timer.snapshot().mean == pytest.approx(2.0)


def test_stop_records_once_and_returns_the_duration(clock: FakeClock) -> None:
    timer = Timer(clock)
    timing = timer.time()
    clock.advance(0.04)
    assert timing.stop() == pytest.approx(40.0)
    clock.advance(0.04)
    assert timing.stop() == pytest.approx(80.0)
    assert timer.count == 1


def test_timer_rates_follow_the_meter_rules(clock: FakeClock) -> None:
    timer = Timer(clock)
    for _ in range(3):
        timer.update_ms(1.0)
    clock.advance(5.5)
    rates = timer.rates()
    assert (rates.count, rates.m1_rate) == (3, pytest.approx(0.6))
