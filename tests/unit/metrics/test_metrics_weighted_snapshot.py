"""WeightedSnapshot against Dropwizard's WeightedSnapshotTest figures."""

from __future__ import annotations

import pytest

from shared.metrics.weighted_snapshot import WeightedSnapshot

# Dropwizard: values {5, 1, 2, 3, 4} with weights {1, 2, 3, 2, 2}.
SAMPLES = [(5.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 2.0), (4.0, 2.0)]


@pytest.mark.parametrize(
    ("quantile", "value"),
    [(0.0, 1.0), (0.5, 3.0), (0.75, 4.0), (0.95, 5.0), (0.98, 5.0), (0.99, 5.0), (1.0, 5.0)],
)
def test_quantiles_match_dropwizard(quantile: float, value: float) -> None:
    assert WeightedSnapshot(SAMPLES).value(quantile) == value


def test_low_quantiles_fall_on_the_first_value_of_their_weight_band() -> None:
    snapshot = WeightedSnapshot(SAMPLES)
    # cumulative weight before each sorted value: 1:0.0 2:0.2 3:0.5 4:0.7 5:0.9
    assert [snapshot.value(q) for q in (0.19, 0.2, 0.49, 0.69, 0.7, 0.89, 0.9)] == [
        1.0,
        2.0,
        2.0,
        3.0,
        4.0,
        4.0,
        5.0,
    ]


def test_min_max_mean_stddev_match_dropwizard() -> None:
    snapshot = WeightedSnapshot(SAMPLES)
    assert (snapshot.min, snapshot.max, snapshot.size) == (1.0, 5.0, 5)
    assert snapshot.mean == pytest.approx(2.7)
    assert snapshot.stddev == pytest.approx(1.2688, abs=1e-4)


def test_empty_snapshot_is_all_zeros() -> None:
    snapshot = WeightedSnapshot([])
    assert (snapshot.size, snapshot.min, snapshot.max, snapshot.mean, snapshot.stddev) == (
        0,
        0.0,
        0.0,
        0.0,
        0.0,
    )
    assert snapshot.value(0.99) == 0.0


def test_one_sample_has_no_spread() -> None:
    snapshot = WeightedSnapshot([(7.5, 3.0)])
    assert (snapshot.value(0.5), snapshot.mean, snapshot.stddev) == (7.5, 7.5, 0.0)


@pytest.mark.parametrize("bad", [-0.1, 1.1, float("nan")])
def test_quantiles_outside_zero_to_one_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        WeightedSnapshot(SAMPLES).value(bad)
