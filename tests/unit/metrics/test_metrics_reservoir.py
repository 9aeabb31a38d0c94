"""ExponentiallyDecayingReservoir: bounded, recency-biased, correct across rescales."""

from __future__ import annotations

import random

import pytest
from metrics_fakes import FakeClock

from shared.metrics.reservoir import RESCALE_INTERVAL_S, ExponentiallyDecayingReservoir


def _values(reservoir: ExponentiallyDecayingReservoir) -> list[float]:
    snapshot = reservoir.snapshot()
    return [snapshot.value(i / snapshot.size) for i in range(snapshot.size)]


def test_a_reservoir_of_100_keeps_100_of_1000_values(clock: FakeClock) -> None:
    reservoir = ExponentiallyDecayingReservoir(100, 0.99, clock, random.Random(1))
    for value in range(1000):
        reservoir.update(float(value))
        clock.advance(0.001)
    assert len(reservoir) == 100
    assert reservoir.snapshot().size == 100
    assert all(0 <= v < 1000 for v in _values(reservoir))


def test_fewer_values_than_the_size_are_all_kept_exactly(clock: FakeClock) -> None:
    reservoir = ExponentiallyDecayingReservoir(clock=clock, rand=random.Random(2))
    for value in (4.0, 1.0, 3.0, 2.0):
        reservoir.update(value)
    snapshot = reservoir.snapshot()
    assert (snapshot.size, snapshot.min, snapshot.max, snapshot.mean) == (4, 1.0, 4.0, 2.5)


def test_recent_values_outweigh_old_ones(clock: FakeClock) -> None:
    reservoir = ExponentiallyDecayingReservoir(100, 0.015, clock, random.Random(3))
    for _ in range(1000):
        reservoir.update(1000.0)
    clock.advance(600)  # ten minutes later: new weights are e^9 times the old ones
    for _ in range(1000):
        reservoir.update(10.0)
    snapshot = reservoir.snapshot()
    assert snapshot.value(0.5) == 10.0
    assert snapshot.value(0.99) == 10.0
    assert snapshot.mean == pytest.approx(10.0, rel=0.01)


def test_long_inactivity_does_not_corrupt_sampling(clock: FakeClock) -> None:
    """Port of Dropwizard's longPeriodsOfInactivityShouldNotCorruptSamplingState."""
    reservoir = ExponentiallyDecayingReservoir(10, 0.15, clock, random.Random(4))
    for i in range(1000):  # 10 values a second
        reservoir.update(1000.0 + i)
        clock.advance(0.1)
    assert reservoir.snapshot().size == 10
    assert all(1000 <= v < 2000 for v in _values(reservoir))
    clock.advance(15 * 3600)  # the rescale factor underflows to 0: every old sample goes
    reservoir.update(2000.0)
    assert reservoir.snapshot().size == 1
    assert _values(reservoir) == [2000.0]
    for i in range(1000):
        reservoir.update(3000.0 + i)
        clock.advance(0.1)
    assert reservoir.snapshot().size == 10
    assert all(3000 <= v < 4000 for v in _values(reservoir))


def test_rescaling_keeps_old_and_new_weights_comparable(clock: FakeClock) -> None:
    """After an hour the start moves; an old sample must weigh e^-54 next to a fresh one."""
    reservoir = ExponentiallyDecayingReservoir(10, 0.015, clock, random.Random(5))
    for _ in range(5):
        reservoir.update(1.0)
    clock.advance(RESCALE_INTERVAL_S)
    reservoir.update(99.0)  # triggers the rescale, then weighs against the new start
    snapshot = reservoir.snapshot()
    assert snapshot.size == 6
    assert snapshot.value(0.5) == 99.0
    assert snapshot.mean == pytest.approx(99.0)
    assert snapshot.min == 1.0  # old samples are still held, just nearly weightless


def test_update_many_uses_one_weight_for_the_batch(clock: FakeClock) -> None:
    reservoir = ExponentiallyDecayingReservoir(clock=clock, rand=random.Random(6))
    assert reservoir.update_many(float(v) for v in range(1, 101)) == 100
    snapshot = reservoir.snapshot()
    assert (snapshot.size, snapshot.min, snapshot.max) == (100, 1.0, 100.0)
    assert snapshot.mean == pytest.approx(50.5)
    assert snapshot.value(0.555) == 56.0  # equal weights: 55 values lie below 0.555


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least one sample"):
        ExponentiallyDecayingReservoir(0)
