"""The per-series state kept in the driver: batches, timeouts, versions and replays (no Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.metrics_aggregator.checkpoint import batch_timestamp_ms
from services.metrics_aggregator.series_step import Series
from services.metrics_aggregator.series_store import PRUNE_EVERY, SeriesStore
from services.metrics_aggregator.series_table import SeriesTable
from services.metrics_aggregator.snapshots import FLOAT_FIELDS, tags_key

KEY = ("detector.velocity", "records.in", tags_key({"detector": "velocity"}))
TTL = 60_000


def record(**fields: Any) -> dict[str, Any]:
    """An input row as the Spark side collects it (series_input's columns)."""
    row: dict[str, Any] = dict.fromkeys(FLOAT_FIELDS)
    row.update(service=KEY[0], name=KEY[1], tags=KEY[2], partition=0, has_count=True, count=0)
    row.update(fields)
    return row


def table(tmp_path: Path, ttl: int = TTL) -> SeriesTable:
    return SeriesTable(SeriesStore(tmp_path / "states.db"), ttl)


def totals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["scope"] == "all"]


def test_counts_stay_exact_64_bit_integers(tmp_path):
    big = 2**62 + 1
    result = table(tmp_path).apply(0, [
        record(instance_id="a", type="COUNTER", timestamp=9_000, count=big, offset=1),
    ], now_ms=10_000)  # fmt: skip
    [total] = totals(result.rows)
    assert total["count"] == big and isinstance(total["count"], int)
    assert result.snapshots == 1


def test_rows_are_merged_in_timestamp_then_offset_order_whatever_the_input_order(tmp_path):
    rows = [
        record(instance_id="a", type="COUNTER", timestamp=9_000, count=9, offset=7),
        record(instance_id="a", type="COUNTER", timestamp=9_000, count=8, offset=6),
        record(instance_id="a", type="COUNTER", timestamp=8_000, count=1, offset=5),
    ]
    result = table(tmp_path).apply(0, rows, now_ms=10_000)
    [total] = totals(result.rows)
    assert (total["count"], total["snapshots"]) == (9, 3)


def test_a_null_count_is_not_a_zero_count(tmp_path):
    result = table(tmp_path).apply(0, [
        record(instance_id="g", type="GAUGE", timestamp=9_000, has_count=False, value=2.5,
               offset=1),
    ], now_ms=10_000)  # fmt: skip
    [instance] = [r for r in result.rows if r["scope"] == "instance"]
    assert instance["count"] is None and instance["value"] == 2.5


def test_series_are_kept_apart_by_service_name_and_tags(tmp_path):
    other_tags = tags_key({"detector": "velocity", "rule": "r1"})
    result = table(tmp_path).apply(0, [
        record(instance_id="a", type="COUNTER", timestamp=1, count=1, offset=1),
        record(instance_id="a", type="COUNTER", timestamp=1, count=2, offset=2, tags=other_tags),
        record(instance_id="a", type="COUNTER", timestamp=1, count=4, offset=3, name="errors"),
    ], now_ms=10_000)  # fmt: skip
    assert sorted(t["count"] for t in totals(result.rows)) == [1, 2, 4]


def test_a_silent_series_runs_only_once_a_batch_clock_is_past_its_deadline(tmp_path):
    series = table(tmp_path)
    series.apply(0, [
        record(instance_id="a", type="GAUGE", timestamp=9_000, value=1.0, offset=1),
        record(instance_id="b", type="GAUGE", timestamp=5_000, value=2.0, offset=2),
    ], now_ms=10_000)  # fmt: skip
    # b's deadline is 65 000: a batch at that very ms does not fire it (Spark's timeouts fire
    # strictly before the batch's timestamp), the next one does.
    assert series.apply(1, [], now_ms=5_000 + TTL).rows == []
    [total] = totals(series.apply(2, [], now_ms=66_000).rows)
    assert (total["value"], total["instances"], total["stale_instances"]) == (1.0, 1, 1)
    assert total["time_ms"] == 5_000 + TTL and total["snapshots"] == 0
    # Nothing more to retire until a's deadline.
    assert series.apply(3, [], now_ms=67_000).rows == []
    [last] = totals(series.apply(4, [], now_ms=9_000 + TTL + 1).rows)
    assert (last["value"], last["instances"], last["stale_instances"]) == (0.0, 0, 2)


def test_a_batch_run_again_starts_from_the_state_before_it_and_emits_the_same_rows(tmp_path):
    first = [record(instance_id="a", type="COUNTER", timestamp=1_000, count=4, offset=1)]
    second = [
        record(instance_id="a", type="COUNTER", timestamp=2_000, count=5, offset=2),
        record(instance_id="b", type="COUNTER", timestamp=2_000, count=1, offset=3),
    ]
    series = table(tmp_path)
    series.apply(0, first, now_ms=3_000)
    emitted = series.apply(1, second, now_ms=4_000).rows
    # The query died before Spark committed batch 1 and runs it again: in this process ...
    assert series.apply(1, second, now_ms=4_000).rows == emitted
    # ... or in a new one, from the file.
    again = table(tmp_path)
    assert again.apply(1, second, now_ms=4_000).rows == emitted
    [total] = totals(emitted)
    assert (total["count"], total["instances"]) == (6, 2)
    # The batch after it continues from batch 1's state.
    after = again.apply(2, [record(instance_id="b", type="COUNTER", timestamp=5_000, count=2,
                                   offset=4)], now_ms=6_000)  # fmt: skip
    assert totals(after.rows)[0]["count"] == 7


def test_a_batch_that_failed_half_way_does_not_leave_its_changes_in_memory(tmp_path):
    series = table(tmp_path)
    series.apply(0, [record(instance_id="a", type="COUNTER", timestamp=1_000, count=4,
                            offset=1)], now_ms=3_000)  # fmt: skip

    def refuse(version: int, states: object) -> None:
        raise OSError("disk full")

    save, series.store.save = series.store.save, refuse
    batch = [record(instance_id="a", type="COUNTER", timestamp=2_000, count=9, offset=2)]
    with pytest.raises(OSError):
        series.apply(1, batch, now_ms=4_000)
    series.store.save = save
    [total] = totals(series.apply(1, batch, now_ms=4_000).rows)
    assert total["count"] == 9 and total["snapshots"] == 1


def test_the_store_keeps_the_last_two_versions_loadable_and_prunes_older_ones(tmp_path):
    store = SeriesStore(tmp_path / "states.db")
    a, b = Series("s", "a", "[]"), Series("s", "b", "[]")
    store.save(0, {a: "a0", b: "b0"})
    for version in range(1, 3 * PRUNE_EVERY):
        store.save(version, {a: f"a{version}"})
    last = 3 * PRUNE_EVERY - 1
    assert store.load(last) == {a: f"a{last}", b: "b0"}
    assert store.load(last - 1) == {a: f"a{last - 1}", b: "b0"}
    assert store.versions() < 2 * PRUNE_EVERY + 2  # not one row per version forever
    # A failed run of a version left rows: saving that version again replaces them.
    store.save(last + 1, {a: "half", b: "half"})
    store.save(last + 1, {a: "whole"})
    assert store.load(last + 1) == {a: "whole", b: "b0"}


def test_a_batch_clock_is_the_timestamp_spark_wrote_in_the_offset_log(tmp_path):
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    (offsets / "7").write_text(
        'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1795626580186,"conf":{}}\n'
        '{"t.metrics":{"0":12}}\n'
    )
    assert batch_timestamp_ms(tmp_path, 7) == 1795626580186
    (offsets / "8").write_text('v1\n{"t.metrics":{"0":12}}\n')
    with pytest.raises(ValueError, match="batchTimestampMs"):
        batch_timestamp_ms(tmp_path, 8)


def test_a_non_positive_ttl_is_refused(tmp_path):
    with pytest.raises(ValueError):
        table(tmp_path, ttl=0)
