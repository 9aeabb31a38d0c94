"""Histogram: count of every update, statistics of the reservoir's sample."""

from __future__ import annotations

import pytest
from metrics_fakes import FakeClock

from shared.metrics import Histogram, HistogramSnapshot


def test_count_is_every_update_not_the_sample_size(clock: FakeClock) -> None:
    histogram = Histogram(clock)
    for value in range(5000):
        histogram.update(float(value))
    snapshot = histogram.snapshot()
    assert (histogram.count, snapshot.count) == (5000, 5000)
    assert snapshot.samples == 1028


def test_statistics_of_a_small_sample_are_exact(clock: FakeClock) -> None:
    histogram = Histogram(clock)
    for value in (10.0, 20.0, 30.0, 40.0):
        histogram.update(value)
    snapshot = histogram.snapshot()
    assert (snapshot.min, snapshot.max, snapshot.mean) == (10.0, 40.0, 25.0)
    assert snapshot.stddev == pytest.approx(11.180339887)  # population stddev
    # Equal weights of 0.25: cumulative before each value 0, .25, .5, .75.
    assert (snapshot.p50, snapshot.p75, snapshot.p95, snapshot.p999) == (30.0, 40.0, 40.0, 40.0)


def test_negative_values_are_kept(clock: FakeClock) -> None:
    """End-to-end delays go negative when producer clocks run ahead: keep them visible."""
    histogram = Histogram(clock)
    histogram.update(-5.0)
    histogram.update(5.0)
    assert histogram.snapshot().min == -5.0


def test_update_many_counts_every_value(clock: FakeClock) -> None:
    histogram = Histogram(clock)
    histogram.update(1.0)
    histogram.update_many([2.0, 3.0, 4.0])
    histogram.update_many(iter([5.0]))
    assert histogram.count == 5
    assert histogram.snapshot().max == 5.0


def test_an_empty_histogram_reports_zeros_and_no_samples(clock: FakeClock) -> None:
    assert Histogram(clock).snapshot() == HistogramSnapshot(0, *([0.0] * 10), samples=0)
