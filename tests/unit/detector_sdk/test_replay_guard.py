"""The replay guard (shared/detector/replays.py): a copy of a raw record that a restarted ingest
routed again is told apart by its raw source, in a task's changelogged state."""

from __future__ import annotations

from shared.detector import TaskState, Window
from shared.lineage import SOURCE_HEADER, SOURCE_TIMESTAMP_HEADER, Source, source_of

RAW = b"raw.transactions:3"


def _state() -> TaskState:
    return TaskState((Window("w", size_ms=60_000),), task=0)


def _fed(state: TaskState, offsets: list[int], stamp: int = 1_000) -> list[bool]:
    """Feed raw offsets (one input offset each, in order): which were skipped as replays."""
    return [
        state.replayed("records.transactions", i, Source(RAW, raw, stamp + raw))
        for i, raw in enumerate(offsets)
    ]


def test_a_replayed_range_is_skipped_and_what_follows_it_is_taken() -> None:
    state = _state()
    # The killed job routed 0..9, its restart routes again from its checkpoint (6) and on.
    skipped = _fed(state, [*range(10), *range(6, 14)])
    assert skipped == [False] * 10 + [True] * 4 + [False] * 4


def test_raw_partitions_are_told_apart() -> None:
    state = _state()
    assert not state.replayed("t", 0, Source(b"raw.transactions:0", 5, 10))
    assert not state.replayed("t", 1, Source(b"raw.transactions:1", 5, 10))
    assert not state.replayed("t", 2, Source(b"raw.logins:0", 5, 10))
    assert state.replayed("t", 3, Source(b"raw.transactions:0", 5, 10))


def test_a_raw_topic_created_again_is_taken_from_its_new_start() -> None:
    state = _state()
    _fed(state, list(range(100)))
    # Offsets start at 0 again, but the records are newer than anything seen.
    assert _fed(state, [0, 1, 2], stamp=10_000) == [False, False, False]
    assert state.replays.marks()["raw.transactions:3"] == (2, 10_002)


def test_late_raw_timestamps_do_not_let_a_replay_through() -> None:
    state = _state()
    stamps = [5_000, 1_000, 4_000]  # the raw records' own times are out of order
    for i, stamp in enumerate(stamps):
        assert not state.replayed("t", i, Source(RAW, i, stamp))
    assert all(state.replayed("t", 3 + i, Source(RAW, i, stamp)) for i, stamp in enumerate(stamps))


def test_marks_go_to_the_changelog_with_their_record_and_restore() -> None:
    state = _state()
    _fed(state, [0, 1, 2])
    changes = state.drain()
    assert [(c.topic, c.offset) for c in changes] == [("records.transactions", 2)]
    restored = _state()
    for change in changes:
        restored.restore(change.key, change.value)
    assert restored.replays.marks() == {"raw.transactions:3": (2, 1_002)}
    assert restored.replayed("t", 0, Source(RAW, 1, 1_001))
    assert restored.snapshot() == {"w": {}}  # the guard is not one of the detector's stores


def test_a_failed_record_keeps_its_mark() -> None:
    state = _state()
    assert not state.replayed("t", 0, Source(RAW, 0, 1))
    state.begin("t", 0, 1)
    state.stores["w"].add("k", 1)  # type: ignore[union-attr]
    state.rollback_record()
    assert state.snapshot() == {"w": {}}
    assert state.replayed("t", 1, Source(RAW, 0, 1))  # dead-lettered once, not again


def test_the_source_is_read_from_the_lineage_headers() -> None:
    headers = [("traceparent", b"00-x"), (SOURCE_HEADER, b"raw.a.b:7:123"),
               (SOURCE_TIMESTAMP_HEADER, b"1700")]  # fmt: skip
    assert source_of(headers) == Source(b"raw.a.b:7", 123, 1700)
    assert source_of([(SOURCE_HEADER, b"raw.t:1:9")]) == Source(b"raw.t:1", 9, -1)
    assert source_of(None) is None
    assert source_of([("traceparent", b"00-x")]) is None
    assert source_of([(SOURCE_HEADER, b"garbage")]) is None
