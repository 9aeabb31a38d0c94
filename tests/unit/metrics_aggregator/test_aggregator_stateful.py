"""The applyInPandasWithState function on pandas frames and a stand-in GroupState (no Spark)."""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

from services.metrics_aggregator.series_step import ROW_COLUMNS
from services.metrics_aggregator.snapshots import FLOAT_FIELDS, tags_key
from services.metrics_aggregator.stateful import OUTPUT_SCHEMA, SeriesUpdater

KEY = ("detector.velocity", "records.in", tags_key({"detector": "velocity"}))
TTL = 60_000


class FakeGroupState:
    """The parts of pyspark's GroupState the updater uses."""

    def __init__(self, value: tuple | None, now_ms: int, timed_out: bool = False) -> None:
        self.value = value
        self.now_ms = now_ms
        self.hasTimedOut = timed_out
        self.timeout_ms: int | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        assert self.value is not None
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value

    def setTimeoutDuration(self, duration_ms: int) -> None:
        self.timeout_ms = duration_ms

    def getCurrentProcessingTimeMs(self) -> int:
        return self.now_ms


def frame(*rows: dict) -> pd.DataFrame:
    full = []
    for row in rows:
        record = dict.fromkeys(FLOAT_FIELDS, float("nan"))
        record.update(service=KEY[0], name=KEY[1], tags=KEY[2], partition=0, has_count=True)
        record.update(row)
        full.append(record)
    return pd.DataFrame(full)


def run(updater, state, *frames):
    return list(updater(KEY, iter(frames), state))


def test_counts_stay_exact_64_bit_integers_through_pandas():
    big = 2**62 + 1
    updater = SeriesUpdater(TTL)
    state = FakeGroupState(None, now_ms=10_000)
    [out] = run(updater, state, frame(
        {"instance_id": "a", "type": "COUNTER", "timestamp": 9_000, "count": big, "offset": 1},
    ))  # fmt: skip
    assert list(out.columns) == list(ROW_COLUMNS)
    assert str(out["count"].dtype) == "Int64"
    assert out.loc[out["scope"] == "all", "count"].item() == big
    assert state.timeout_ms == 9_000 + TTL - 10_000


def test_rows_are_merged_in_timestamp_then_offset_order_whatever_the_frame_order():
    updater = SeriesUpdater(TTL)
    state = FakeGroupState(None, now_ms=10_000)
    rows = [
        {"instance_id": "a", "type": "COUNTER", "timestamp": 9_000, "count": 9, "offset": 7},
        {"instance_id": "a", "type": "COUNTER", "timestamp": 9_000, "count": 8, "offset": 6},
        {"instance_id": "a", "type": "COUNTER", "timestamp": 8_000, "count": 1, "offset": 5},
    ]
    [out] = run(updater, state, frame(rows[0]), frame(*rows[1:]))
    assert out.loc[out["scope"] == "all", "count"].item() == 9
    assert out.loc[out["scope"] == "all", "snapshots"].item() == 3


def test_a_null_count_is_not_a_zero_count():
    updater = SeriesUpdater(TTL)
    state = FakeGroupState(None, now_ms=10_000)
    [out] = run(updater, state, frame(
        {"instance_id": "g", "type": "GAUGE", "timestamp": 9_000, "count": 0, "has_count": False,
         "value": 2.5, "offset": 1},
    ))  # fmt: skip
    instance = out[out["scope"] == "instance"].iloc[0]
    assert pd.isna(instance["count"]) and instance["value"] == 2.5


def test_the_state_is_carried_between_calls_and_a_timeout_drops_stale_instances():
    updater = SeriesUpdater(TTL)
    state = FakeGroupState(None, now_ms=10_000)
    run(updater, state, frame(
        {"instance_id": "a", "type": "GAUGE", "timestamp": 9_000, "value": 1.0, "offset": 1},
        {"instance_id": "b", "type": "GAUGE", "timestamp": 5_000, "value": 2.0, "offset": 2},
    ))  # fmt: skip
    later = FakeGroupState(state.value, now_ms=66_000, timed_out=True)
    [out] = run(updater, later)
    total = out.iloc[0]
    assert (total["value"], total["instances"], total["stale_instances"]) == (1.0, 1, 1)
    # Nothing more to retire: nothing emitted, the timeout moves to a's deadline.
    quiet = FakeGroupState(later.value, now_ms=67_000, timed_out=True)
    assert run(updater, quiet) == []
    assert quiet.timeout_ms == 9_000 + TTL - 67_000


def test_the_updater_pickles_by_reference_to_its_module():
    """Workers import services.metrics_aggregator.stateful to unpickle it (the arrow fix)."""
    data = pickle.dumps(SeriesUpdater(TTL, 5))
    assert b"services.metrics_aggregator.stateful" in data
    assert pickle.loads(data).remember == 5


def test_the_output_schema_names_every_row_column_with_its_type():
    assert "`count` long" in OUTPUT_SCHEMA and "`p999` double" in OUTPUT_SCHEMA
    assert OUTPUT_SCHEMA.count("`") == 2 * len(ROW_COLUMNS)


def test_a_non_positive_ttl_is_refused():
    with pytest.raises(ValueError):
        SeriesUpdater(0)
