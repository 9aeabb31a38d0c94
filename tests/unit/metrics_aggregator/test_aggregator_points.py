"""Rows -> InfluxDB points and their line protocol (docs/metrics.md, InfluxDB schema)."""

from __future__ import annotations

from aggregator_builders import counter, timer

from services.metrics_aggregator.points import series_points, window_point
from services.metrics_aggregator.series_state import SeriesState
from services.metrics_aggregator.series_step import Series, step
from services.metrics_aggregator.snapshots import tags_key
from shared.influx.line_protocol import encode_points

SERIES = Series("detector.velocity", "records.in", tags_key({"detector": "velocity"}))


def rows_of(*snapshots):
    return step(SERIES, SeriesState(), list(snapshots), now_ms=3_000, stale_after_ms=60_000).rows


def test_total_and_instance_points_carry_the_contract_tags_and_integer_fields():
    points = series_points(rows_of(counter("a@h:1:1", 1_000, 5), counter("b@h:2:1", 2_000, 7)))
    assert encode_points(points).splitlines() == [
        "records.in,detector=velocity,instance=a@h:1:1,scope=instance,service=detector.velocity "
        "count=5i 1000000000",
        "records.in,detector=velocity,instance=b@h:2:1,scope=instance,service=detector.velocity "
        "count=7i 2000000000",
        "records.in,detector=velocity,scope=all,service=detector.velocity "
        "count=12i,instances=2i,stale_instances=0i 2000000000",
    ]


def test_figures_that_do_not_apply_or_are_missing_are_left_out_and_floats_stay_floats():
    points = series_points(rows_of(timer("a", 1_000, 4, mean=2.0, p99=3.0)))
    [total] = [p for p in points if p.tags["scope"] == "all"]
    [instance] = [p for p in points if p.tags["scope"] == "instance"]
    assert dict(instance.fields) == {"count": 4, "mean": 2.0, "p99": 3.0}
    assert isinstance(total.fields["mean"], float) and isinstance(total.fields["count"], int)
    assert set(total.fields) == {
        "count", "m1_rate", "m5_rate", "m15_rate", "mean_rate", "mean", "p99",
        "instances", "stale_instances",
    }  # fmt: skip


def test_the_same_rows_in_any_order_give_the_same_line_protocol():
    rows = rows_of(counter("a", 1_000, 5), counter("b", 2_000, 7), counter("c", 1_500, 1))
    assert encode_points(series_points(rows)) == encode_points(series_points(reversed(rows)))


def test_the_contract_tags_win_over_a_metric_tag_of_the_same_name():
    series = Series("ingest", "records", tags_key({"scope": "mine", "service": "x", "k": "v"}))
    rows = step(series, SeriesState(), [counter("a", 1, 1)], now_ms=1, stale_after_ms=10).rows
    [total] = [p for p in series_points(rows) if "instance" not in p.tags]
    assert dict(total.tags) == {"k": "v", "scope": "all", "service": "ingest"}


def test_a_window_count_is_a_point_at_the_window_start():
    point = window_point("raw.transactions", 1_795_000_000_000, "INVALID", 12)
    assert encode_points([point]) == (
        "ingest.window,outcome=invalid,source_topic=raw.transactions count=12i "
        "1795000000000000000\n"
    )
