"""Cross-instance rules of docs/metrics.md for rates, gauges, histograms and timers."""

from __future__ import annotations

import math

from aggregator_builders import gauge, meter, timer

from services.metrics_aggregator.series_state import SeriesState
from services.metrics_aggregator.snapshots import Snapshot
from services.metrics_aggregator.totals import merge_histograms, total_fields


def state_of(*snapshots: Snapshot) -> SeriesState:
    state = SeriesState()
    for snapshot in snapshots:
        state.merge(snapshot)
    return state


def test_meter_rates_are_summed_over_live_instances_and_counts_over_all():
    state = state_of(meter("a", 1_000, 100, 8.0), meter("b", 50_000, 10, 2.0))
    state.expire(now_ms=61_000, stale_after_ms=60_000)
    fields = total_fields(state)
    assert fields == {
        "count": 110,
        "m1_rate": 2.0,
        "m5_rate": 1.0,
        "m15_rate": 0.5,
        "mean_rate": 0.25,
        "instances": 1,
        "stale_instances": 1,
    }


def test_gauges_are_summed_over_live_instances_and_zero_when_none_is_live():
    state = state_of(gauge("a", 1_000, 1.5), gauge("b", 1_000, 2.25))
    assert total_fields(state)["value"] == 3.75
    state.expire(now_ms=61_000, stale_after_ms=60_000)
    assert total_fields(state) == {"value": 0.0, "instances": 0, "stale_instances": 2}


def test_histograms_merge_min_max_weighted_mean_pooled_stddev_and_max_percentiles():
    a = timer("a", 1_000, 30, min=1.0, max=9.0, mean=4.0, stddev=1.0, p50=4.0, p99=8.0)
    b = timer("b", 1_000, 10, min=2.0, max=20.0, mean=8.0, stddev=2.0, p50=7.0, p99=19.0)
    merged = merge_histograms([a, b])
    mean = (30 * 4.0 + 10 * 8.0) / 40
    pooled = math.sqrt((30 * (1.0 + (4.0 - mean) ** 2) + 10 * (4.0 + (8.0 - mean) ** 2)) / 40)
    assert merged == {
        "min": 1.0,
        "max": 20.0,
        "mean": mean,
        "stddev": pooled,
        "p50": 7.0,
        "p99": 19.0,
    }


def test_pooled_stddev_of_identical_instances_is_their_stddev():
    a = timer("a", 1_000, 5, mean=3.0, stddev=0.5)
    b = timer("b", 1_000, 5, mean=3.0, stddev=0.5)
    assert math.isclose(merge_histograms([a, b])["stddev"], 0.5)


def test_an_instance_without_samples_does_not_drag_the_statistics():
    busy = timer("a", 1_000, 10, min=5.0, max=6.0, mean=5.5, stddev=0.5, p99=6.0)
    idle = timer("b", 1_000, 0)  # count only, as shared.metrics reports an empty histogram
    assert merge_histograms([busy, idle]) == merge_histograms([busy])


def test_instances_without_counts_weigh_equally():
    a = Snapshot("a", "HISTOGRAM", 1_000, 0, {"mean": 2.0})
    b = Snapshot("b", "HISTOGRAM", 1_000, 0, {"mean": 4.0})
    assert merge_histograms([a, b])["mean"] == 3.0


def test_a_timer_total_has_the_meter_and_histogram_fields_in_contract_order():
    state = state_of(timer("a", 1_000, 3, min=1.0, max=2.0, mean=1.5, stddev=0.5, p50=1.5))
    assert list(total_fields(state)) == [
        "count", "m1_rate", "m5_rate", "m15_rate", "mean_rate",
        "min", "max", "mean", "stddev", "p50", "instances", "stale_instances",
    ]  # fmt: skip


def test_a_stale_histogram_instance_leaves_the_statistics_but_not_the_count():
    old = timer("a", 1_000, 100, min=0.5, max=99.0, mean=50.0, stddev=9.0, p99=98.0)
    new = timer("b", 50_000, 10, min=1.0, max=2.0, mean=1.5, stddev=0.5, p99=2.0)
    state = state_of(old, new)
    state.expire(now_ms=61_000, stale_after_ms=60_000)
    fields = total_fields(state)
    assert fields["count"] == 110
    assert (fields["min"], fields["max"], fields["mean"], fields["p99"]) == (1.0, 2.0, 1.5, 2.0)
