"""The channel's circuit breaker: opens after failures in a row, lets one trial through after
the cool-down, closes on its success and opens again on its failure."""

from __future__ import annotations

from services.notifier.breaker import CLOSED, HALF_OPEN, OPEN, Breaker


def test_failures_in_a_row_open_it_and_a_success_in_between_resets_the_count() -> None:
    breaker = Breaker(failure_threshold=3, cooldown_s=10)
    for _ in range(2):
        assert breaker.allows(0.0)
        breaker.record(False, 0.0)
    breaker.record(True, 0.0)
    assert (breaker.state, breaker.failures) == (CLOSED, 0)
    for _ in range(3):
        breaker.record(False, 1.0)
    assert breaker.state == OPEN and not breaker.allows(5.0)
    assert breaker.reopens_at() == 11.0


def test_after_the_cool_down_one_trial_at_a_time_decides() -> None:
    breaker = Breaker(failure_threshold=1, cooldown_s=10)
    breaker.record(False, 0.0)
    assert not breaker.allows(9.9)
    assert breaker.allows(10.0) and breaker.state == HALF_OPEN
    assert not breaker.allows(10.1), "a second trial while the first is in flight"
    breaker.record(False, 10.5)
    assert breaker.state == OPEN and not breaker.allows(15.0)
    assert breaker.allows(20.5)
    breaker.record(True, 21.0)
    assert breaker.state == CLOSED and breaker.allows(21.0) and breaker.allows(21.0)
