"""EWMA against Dropwizard's EWMATest figures (mark 3, tick, then a minute of empty ticks)."""

from __future__ import annotations

import math

import pytest

from shared.metrics.ewma import EWMA, M1_ALPHA, M5_ALPHA, M15_ALPHA, advance

TICKS_PER_MINUTE = 12

# Dropwizard metrics-core EWMATest: rate after update(3), tick(), then after each further minute.
DROPWIZARD = {
    1: [0.6, 0.22072766, 0.08120117, 0.02987224, 0.01098938, 0.00404277, 0.00148725],
    5: [0.6, 0.49123845, 0.40219203, 0.32928698, 0.26959738, 0.22072766, 0.18071653],
    15: [0.6, 0.56130419, 0.52510399, 0.49123845, 0.45955700, 0.42991879, 0.40219203],
}


@pytest.mark.parametrize("minutes", [1, 5, 15])
def test_rates_match_dropwizard_ewma_test(minutes: int) -> None:
    ewma = {1: EWMA.one_minute, 5: EWMA.five_minute, 15: EWMA.fifteen_minute}[minutes]()
    ewma.update(3)
    ewma.tick()
    seen = [ewma.rate]
    for _ in range(len(DROPWIZARD[minutes]) - 1):
        for _ in range(TICKS_PER_MINUTE):
            ewma.tick()
        seen.append(ewma.rate)
    assert seen == pytest.approx(DROPWIZARD[minutes], abs=1e-8)
    # ...which is the closed form: 3 events / 5 s, decayed by exp(-elapsed / window).
    expected = [0.6 * math.exp(-m / minutes) for m in range(len(seen))]
    assert seen == pytest.approx(expected, rel=1e-12)


def test_alphas_are_dropwizards() -> None:
    # 1 - exp(-5 s / 60 s / minutes): 0.0799..., 0.0165..., 0.00554...
    alphas = (M1_ALPHA, M5_ALPHA, M15_ALPHA)
    assert alphas == pytest.approx((0.0799555853706767, 0.0165285461783825, 0.0055401519951033))


def test_first_tick_sets_the_instant_rate_then_moves_towards_new_ones() -> None:
    ewma = EWMA.one_minute()
    assert ewma.rate == 0.0
    ewma.update(10)
    ewma.tick()
    assert ewma.rate == pytest.approx(2.0)
    ewma.update(20)  # instant rate 4/s
    ewma.tick()
    assert ewma.rate == pytest.approx(2.0 + M1_ALPHA * (4.0 - 2.0))


@pytest.mark.parametrize("initial", [None, 0.0, 3.5])
def test_advancing_many_ticks_at_once_equals_ticking_one_by_one(initial: float | None) -> None:
    step = initial
    for events in (7, 0, 0, 0, 0, 0, 0, 0, 0, 0):
        step = advance(step, M5_ALPHA, events, 1)
    assert advance(initial, M5_ALPHA, 7, 10) == pytest.approx(step, rel=1e-12)
