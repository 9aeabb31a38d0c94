"""The checkpoint-interval benchmark's arithmetic: first copies and replays from the routed
records' lineage headers, the tail's window, and when the latency was back after the kill."""

from __future__ import annotations

import pytest

from bench.scenarios.checkpoint_interval import (
    INTERVALS_S,
    alerts_around,
    back_under,
    intervals,
    routed_copies,
    within,
)
from shared.errors import MeshError
from shared.latency_picture import buckets
from shared.lineage import SOURCE_HEADER, SOURCE_TIMESTAMP_HEADER


class _Message:
    def __init__(self, source: str, raw_ms: int, routed_ms: int) -> None:
        self._headers = [(SOURCE_HEADER, source.encode()),
                         (SOURCE_TIMESTAMP_HEADER, str(raw_ms).encode())]  # fmt: skip
        self._routed_ms = routed_ms

    def headers(self) -> list[tuple[str, bytes]]:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return 1, self._routed_ms


def test_a_replayed_copy_counts_as_routed_again_and_only_the_first_gives_the_latency() -> None:
    routed = routed_copies([
        _Message("raw:0:1", 1_000, 1_010),
        _Message("raw:0:2", 1_100, 1_150),
        _Message("raw:0:1", 1_000, 40_000),  # the replay's copy
        _Message("raw:1:1", 1_200, 1_205),
    ], 30_000)  # fmt: skip
    assert routed.copies_beyond_first == 1
    assert routed.first_after_kill_ms == 40_000  # the replay's copy: routing went on
    assert routed.latency_ms == [10.0, 50.0, 5.0]
    assert routed.raw_at_ms == [1_000, 1_100, 1_200]
    assert routed.routed_at_ms == [1_010, 1_150, 1_205]


def test_a_record_without_lineage_is_left_out() -> None:
    class Bare(_Message):
        def headers(self) -> list[tuple[str, bytes]]:
            return []

    assert routed_copies([Bare("x", 0, 0)], 0).latency_ms == []


def test_the_tail_window_holds_the_raw_records_sent_inside_it() -> None:
    assert within([0, 999, 1_000, 5_000], [1.0, 2.0, 3.0, 4.0], 999, 5_000) == [2.0, 3.0]


def test_back_under_is_the_end_of_the_first_quick_bucket_after_the_kill() -> None:
    origin, kill = 0, 12_000
    raw_at = [1_000, 6_000, 11_000, 16_000, 21_000, 26_000]
    latency = [20.0, 20.0, 20.0, 9_000.0, 150.0, 40.0]  # before the kill quick: not counted
    series = buckets(raw_at, latency, origin)
    assert back_under(series, origin, kill, 100.0) == 18.0  # the bucket [25 s, 30 s) ends 18 s on
    assert back_under(series, origin, kill, 10.0) is None


def test_alerts_are_counted_once_per_id_on_the_side_of_the_kill_where_they_came_first() -> None:
    def alert(alert_id: str, detector: str) -> dict[str, str]:
        return {"alert_id": alert_id, "detector": detector}

    alerts = [
        (alert("a", "large_amount"), 100),
        (alert("a", "large_amount"), 900),  # the replay's copy of a: counted before
        (alert("b", "velocity"), 800),  # a new id after the kill
        (alert("c", "velocity"), 200),
    ]
    assert alerts_around(alerts, 500) == {"large_amount": [1, 0], "velocity": [1, 1]}


def test_the_intervals_can_be_chosen_and_a_bad_choice_is_one_line() -> None:
    assert intervals({}) == INTERVALS_S
    assert intervals({"MESH_BENCH_CHECKPOINT_INTERVALS": "30"}) == (30,)
    assert intervals({"MESH_BENCH_CHECKPOINT_INTERVALS": " 30,120 "}) == (30, 120)
    for bad in ("2", "30,x", ","):
        with pytest.raises(MeshError, match="MESH_BENCH_CHECKPOINT_INTERVALS="):
            intervals({"MESH_BENCH_CHECKPOINT_INTERVALS": bad})
