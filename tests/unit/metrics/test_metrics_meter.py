"""Meter: Dropwizard's lazy 5 s ticks, rates in events/s, mean rate since creation."""

from __future__ import annotations

import math

import pytest
from metrics_fakes import FakeClock

from shared.metrics import Meter
from shared.metrics.ewma import EWMA, M1_ALPHA


def test_a_new_meter_has_zero_count_and_rates(clock: FakeClock) -> None:
    meter = Meter(clock)
    clock.advance(60)
    assert (meter.count, meter.m1_rate, meter.m5_rate, meter.m15_rate, meter.mean_rate) == (
        0,
        0.0,
        0.0,
        0.0,
        0.0,
    )


def test_mark_three_then_one_tick_gives_dropwizards_point_six(clock: FakeClock) -> None:
    meter = Meter(clock)
    meter.mark(3)
    clock.advance(5)  # exactly one interval: Dropwizard ticks only when *more* has passed
    assert meter.m1_rate == 0.0
    clock.advance(0.001)
    assert meter.m1_rate == pytest.approx(0.6)
    assert meter.m5_rate == pytest.approx(0.6)
    assert meter.m15_rate == pytest.approx(0.6)


def test_rates_decay_over_a_minute_as_dropwizard(clock: FakeClock) -> None:
    meter = Meter(clock)
    meter.mark(3)
    clock.advance(5.5)
    assert meter.m1_rate == pytest.approx(0.6)
    clock.advance(60)  # twelve more ticks, caught up lazily on read
    assert meter.m1_rate == pytest.approx(0.22072766, abs=1e-8)
    assert meter.m5_rate == pytest.approx(0.49123845, abs=1e-8)
    assert meter.m15_rate == pytest.approx(0.56130419, abs=1e-8)


def test_marks_count_towards_the_interval_they_happen_in(clock: FakeClock) -> None:
    """A mark after a tick boundary first applies the due tick (Dropwizard's tickIfNecessary)."""
    meter = Meter(clock)
    reference = EWMA.one_minute()
    meter.mark(3)
    reference.update(3)
    clock.advance(6)  # a tick is due (at 5 s) but nobody has read yet
    meter.mark(2)  # belongs to the second interval
    reference.tick()
    reference.update(2)
    clock.advance(5)  # at 11 s: the second tick (at 10 s) is due
    reference.tick()
    assert meter.m1_rate == pytest.approx(reference.rate)
    assert reference.rate == pytest.approx(0.6 + M1_ALPHA * (0.4 - 0.6))


def test_tick_boundaries_stay_on_the_five_second_grid(clock: FakeClock) -> None:
    meter = Meter(clock)
    clock.advance(7)  # tick at 5 s; the next is at 10 s, not 12 s
    assert meter.m1_rate == 0.0
    meter.mark(5)
    clock.advance(3.5)  # 10.5 s: the 10 s tick sees the 5 events
    assert meter.m1_rate == pytest.approx(0.0 + M1_ALPHA * (1.0 - 0.0))


def test_reads_between_marks_lose_no_events(clock: FakeClock) -> None:
    """Ticks applied by a reader and by the writer interleave; every event is counted once."""
    shadow = FakeClock(clock.now)
    read, unread = Meter(clock), Meter(shadow)
    for step in range(100):
        clock.advance(1.7)
        shadow.advance(1.7)
        if step % 3 == 0:
            _ = read.m1_rate  # a reporter reading applies the due tick before the next mark
        read.mark(step % 4)
        unread.mark(step % 4)
    clock.advance(5.1)
    shadow.advance(5.1)
    assert read.count == unread.count == sum(step % 4 for step in range(100))
    ours, theirs = read.rates(), unread.rates()
    assert ours.m1_rate == pytest.approx(theirs.m1_rate, rel=1e-12)
    assert ours.m15_rate == pytest.approx(theirs.m15_rate, rel=1e-12)
    assert ours.m1_rate > 0


def test_long_silence_is_caught_up_in_one_step(clock: FakeClock) -> None:
    meter = Meter(clock)
    meter.mark(30)
    clock.advance(5.1)
    assert meter.m15_rate == pytest.approx(6.0)
    clock.advance(24 * 3600)  # 17280 ticks
    assert meter.m15_rate == pytest.approx(6.0 * math.exp(-24 * 60 / 15), rel=1e-6)
    assert meter.m1_rate == 0.0  # underflowed, not negative or NaN


def test_mean_rate_is_count_over_seconds_since_creation(clock: FakeClock) -> None:
    meter = Meter(clock)
    clock.advance(10)
    meter.mark(50)
    clock.advance(10)
    assert meter.mean_rate == pytest.approx(50 / 20)


def test_rates_read_together_are_consistent(clock: FakeClock) -> None:
    meter = Meter(clock)
    meter.mark(10)
    clock.advance(8)
    rates = meter.rates()
    assert rates.count == 10
    assert rates.m1_rate == pytest.approx(2.0)
    assert rates.mean_rate == pytest.approx(10 / 8)


def test_negative_marks_are_refused(clock: FakeClock) -> None:
    meter = Meter(clock)
    meter.mark(2)
    with pytest.raises(ValueError, match="monotonic"):
        meter.mark(-1)
    assert meter.count == 2
