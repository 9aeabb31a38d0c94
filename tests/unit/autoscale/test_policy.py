"""The autoscale rule: KEDA's desired count, up at once, down one step after the window."""

from __future__ import annotations

import pytest

from control.autoscale.policy import Recommender
from shared.detector.autoscale import AutoscalePolicy, too_few_partitions

POLICY = AutoscalePolicy(min=1, max=6, lag_per_replica=5000, scale_down_after_s=300)


def test_desired_is_the_lag_over_the_lag_per_replica_rounded_up() -> None:
    decision = Recommender(POLICY).decide(0, lag=12_001, partitions=8, current=1)
    assert (decision.desired, decision.replicas) == (3, 3)
    assert decision.reason == "lag 12 001 / 5 000 per replica -> 3"


@pytest.mark.parametrize(
    ("lag", "partitions", "desired", "why"),
    [
        (48_210, 8, 6, "lag 48 210 / 5 000 per replica -> 6 (max)"),
        (48_210, 4, 4, "lag 48 210 / 5 000 per replica -> 4 (4 partitions)"),
        (0, 8, 1, "lag 0 / 5 000 per replica -> 1 (min)"),
    ],
)
def test_desired_stays_within_max_partitions_and_min(
    lag: int, partitions: int, desired: int, why: str
) -> None:
    decision = Recommender(POLICY).decide(0, lag, partitions, current=desired)
    assert (decision.desired, decision.reason) == (desired, why)


def test_up_at_once_in_one_step_to_the_desired_count() -> None:
    recommender = Recommender(POLICY)
    assert recommender.decide(0, 1000, 8, current=1).replicas == 1
    assert recommender.decide(5, 40_000, 8, current=1).replicas == 6


def test_down_only_after_the_window_then_one_replica_per_decision() -> None:
    recommender = Recommender(POLICY)
    assert recommender.decide(0, 0, 8, current=4).replicas == 4  # lower from t=0
    holding = recommender.decide(88, 0, 8, current=4)
    assert (holding.replicas, holding.holding_s) == (4, 212)
    assert holding.reason.endswith("holding 4 for 212 s more")
    steps = [recommender.decide(300, 0, 8, current=4).replicas]
    steps.append(recommender.decide(305, 0, 8, current=steps[-1]).replicas)
    steps.append(recommender.decide(310, 0, 8, current=steps[-1]).replicas)
    steps.append(recommender.decide(315, 0, 8, current=steps[-1]).replicas)
    assert steps == [3, 2, 1, 1]


def test_a_burst_inside_the_window_starts_the_wait_again() -> None:
    recommender = Recommender(POLICY)
    recommender.decide(0, 0, 8, current=4)
    assert recommender.decide(200, 20_000, 8, current=4).replicas == 4  # desired 4: not lower
    assert recommender.decide(250, 0, 8, current=4).holding_s == 300
    assert recommender.decide(549, 0, 8, current=4).replicas == 4
    assert recommender.decide(550, 0, 8, current=4).replicas == 3


def test_a_count_above_new_bounds_is_brought_inside_at_once() -> None:
    lowered = AutoscalePolicy(min=1, max=2, lag_per_replica=5000)
    assert Recommender(lowered).decide(0, 0, 8, current=5).replicas == 2
    raised = AutoscalePolicy(min=3, max=6, lag_per_replica=5000)
    assert Recommender(raised).decide(0, 0, 8, current=1).replicas == 3


def test_a_detector_whose_input_has_one_partition_cannot_be_autoscaled() -> None:
    assert too_few_partitions("velocity", 1) == (
        "cannot autoscale velocity: its input topic has 1 partition, so one replica does all "
        "the work whatever the lag"
    )
    assert too_few_partitions("velocity", 2) is None
