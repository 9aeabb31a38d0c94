"""One stateful call: what it emits, when it times out, and that replays are identical."""

from __future__ import annotations

import copy

from aggregator_builders import counter, gauge

from services.metrics_aggregator.series_state import SeriesState
from services.metrics_aggregator.series_step import ALL, INSTANCE, ROW_COLUMNS, Series, step
from services.metrics_aggregator.snapshots import tags_key

SERIES = Series("detector.velocity", "records.in", tags_key({"detector": "velocity"}))
TTL = 60_000


def test_a_batch_emits_one_total_and_one_row_per_accepted_snapshot():
    state = SeriesState()
    state.merge(counter("a", 5_000, 50))
    snapshots = [counter("a", 4_000, 40), counter("a", 6_000, 60), counter("b", 6_500, 7)]
    result = step(SERIES, state, snapshots, now_ms=10_000, stale_after_ms=TTL)
    total, *instances = result.rows
    assert total["scope"] == ALL and total["instance"] is None
    assert (total["count"], total["time_ms"], total["snapshots"]) == (67, 6_500, 3)
    assert (total["instances"], total["stale_instances"]) == (2, 0)
    assert [(r["scope"], r["instance"], r["count"], r["time_ms"]) for r in instances] == [
        (INSTANCE, "a", 60, 6_000),
        (INSTANCE, "b", 7, 6_500),
    ]  # the late a@4000 emits nothing
    assert all(list(r) == list(ROW_COLUMNS) for r in result.rows)
    assert result.next_timeout_ms == 6_000 + TTL


def test_a_timeout_with_stale_instances_re_emits_the_total_without_them():
    state = SeriesState()
    step(SERIES, state, [gauge("a", 1_000, 4.0), gauge("b", 30_000, 6.0)],
         now_ms=31_000, stale_after_ms=TTL)  # fmt: skip
    result = step(SERIES, state, [], now_ms=61_500, stale_after_ms=TTL)
    [total] = result.rows
    assert (total["value"], total["instances"], total["stale_instances"]) == (6.0, 1, 1)
    assert total["time_ms"] == 1_000 + TTL  # a new point, the one counting a is kept
    assert total["snapshots"] == 0
    assert result.next_timeout_ms == 30_000 + TTL
    # When everything went silent: one last total, then no timeout any more.
    last = step(SERIES, state, [], now_ms=95_000, stale_after_ms=TTL)
    assert last.rows[0]["value"] == 0.0 and last.rows[0]["instances"] == 0
    assert last.next_timeout_ms is None


def test_a_timeout_with_nothing_to_retire_emits_nothing():
    state = SeriesState()
    step(SERIES, state, [gauge("a", 10_000, 4.0)], now_ms=10_000, stale_after_ms=TTL)
    result = step(SERIES, state, [], now_ms=20_000, stale_after_ms=TTL)
    assert result.rows == []
    assert result.next_timeout_ms == 10_000 + TTL


def test_a_replayed_batch_produces_identical_rows_and_state():
    before = SeriesState()
    step(SERIES, before, [counter("a", 1_000, 5), gauge("b", 1_000, 2.0)],
         now_ms=2_000, stale_after_ms=TTL)  # fmt: skip
    batch = [counter("a", 3_000, 9), counter("c", 3_500, 1)]
    first = step(SERIES, copy.deepcopy(before), batch, now_ms=70_000, stale_after_ms=TTL)
    again = step(SERIES, copy.deepcopy(before), batch, now_ms=70_000, stale_after_ms=TTL)
    assert first.rows == again.rows
    assert first.state.to_json() == again.state.to_json()


def test_snapshots_already_stale_on_arrival_still_count_and_leave_a_point():
    """A fresh checkpoint reads the compacted topic from the start: dead instances included."""
    result = step(SERIES, SeriesState(), [counter("dead", 1_000, 40), counter("alive", 99_000, 2)],
                  now_ms=100_000, stale_after_ms=TTL)  # fmt: skip
    total = result.rows[0]
    assert (total["count"], total["instances"], total["stale_instances"]) == (42, 1, 1)
    assert {r["instance"] for r in result.rows[1:]} == {"dead", "alive"}
