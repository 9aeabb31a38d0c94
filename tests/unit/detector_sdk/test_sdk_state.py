"""State stores: window arithmetic, TTL, undo, changelog and restore."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.detector import KeyValue, StateError, TaskState, Window


def _task(*specs: object) -> TaskState:
    return TaskState(tuple(specs))  # type: ignore[arg-type]


def _at(state: TaskState, offset: int, event_time: int) -> None:
    state.begin("in", offset, event_time)


@settings(max_examples=60, deadline=None)
@given(
    times=st.lists(st.integers(min_value=0, max_value=200_000), min_size=1, max_size=40),
    hop=st.sampled_from([1_000, 5_000, 20_000, 60_000]),
    probe=st.integers(min_value=0, max_value=200_000),
)
def test_window_sums_equal_brute_force(times: list[int], hop: int, probe: int) -> None:
    state = _task(Window("w", size_ms=60_000, hop_ms=hop, grace_ms=10**9))
    store = state.stores["w"]
    for i, t in enumerate(times):
        _at(state, i, t)
        store.add("k", t)  # type: ignore[union-attr]
        state.commit_record()
    windows = store.windows("k", probe)  # type: ignore[union-attr]
    assert len(windows) == 60_000 // hop
    for w in windows:
        assert w.start <= probe < w.end and w.end - w.start == 60_000
        assert w.value == sum(1 for t in times if w.start <= t < w.end)


def test_tumbling_window_is_one_window() -> None:
    state = _task(Window("w", size_ms=10_000))
    _at(state, 0, 12_345)
    state.stores["w"].add("k", 12_345, 2.5)  # type: ignore[union-attr]
    assert state.stores["w"].windows("k", 19_999) == [(10_000, 20_000, 2.5)]  # type: ignore[union-attr]


def test_failed_record_leaves_no_trace() -> None:
    state = _task(KeyValue("kv"), Window("w", size_ms=1_000))
    kv, w = state.stores["kv"], state.stores["w"]
    _at(state, 0, 100)
    kv.set("a", 1)  # type: ignore[union-attr]
    w.add("a", 100)  # type: ignore[union-attr]
    state.commit_record()
    _at(state, 1, 200)
    kv.set("a", 2)  # type: ignore[union-attr]
    kv.set("b", 3)  # type: ignore[union-attr]
    w.add("a", 200)  # type: ignore[union-attr]
    state.rollback_record()
    assert state.snapshot() == {"kv": {"a": 1}, "w": {("a", 0): 1}}


def test_changelog_carries_the_last_write_and_its_input_offset() -> None:
    state = _task(KeyValue("kv"))
    for offset, value in enumerate([1, 2, 3]):
        _at(state, offset, 10)
        state.stores["kv"].set("a", value)  # type: ignore[union-attr]
        state.commit_record()
    changes = state.drain()
    assert [(json.loads(c.key), json.loads(c.value or b""), c.offset) for c in changes] == [
        (["kv", "a"], {"v": 3, "t": 10}, 2)
    ]
    assert state.drain() == []


def test_ttl_expiry_writes_tombstones_and_hides_expired_entries() -> None:
    state = _task(KeyValue("kv", ttl_ms=1_000))
    kv = state.stores["kv"]
    _at(state, 0, 0)
    kv.set("old", 1)  # type: ignore[union-attr]
    state.commit_record()
    state.drain()
    _at(state, 1, 1_500)
    assert kv.get("old") is None  # type: ignore[union-attr]
    kv.set("new", 2)  # type: ignore[union-attr]
    state.commit_record()
    state.expire()
    changes = {json.loads(c.key)[1]: c for c in state.drain()}
    assert changes["old"].value is None and changes["old"].offset == 1
    assert state.snapshot() == {"kv": {"new": 2}}


def test_window_buckets_expire_after_size_plus_grace() -> None:
    state = _task(Window("w", size_ms=1_000, hop_ms=500, grace_ms=1_000))
    _at(state, 0, 0)
    state.stores["w"].add("k", 0)  # type: ignore[union-attr]
    state.commit_record()
    state.drain()
    _at(state, 1, 1_999)
    state.expire()
    assert state.drain() == []
    _at(state, 2, 2_000)
    state.expire()
    [tombstone] = state.drain()
    assert tombstone.value is None and json.loads(tombstone.key) == ["w", "k", 0]


def test_restore_rebuilds_the_same_state() -> None:
    specs = (KeyValue("kv", ttl_ms=10**9), Window("w", size_ms=1_000, hop_ms=250))
    state = _task(*specs)
    changes = []
    for i in range(50):
        _at(state, i, i * 100)
        state.stores["kv"].set(f"c{i % 7}", {"n": i})  # type: ignore[union-attr]
        state.stores["w"].add(f"c{i % 3}", i * 100)  # type: ignore[union-attr]
        state.commit_record()
        state.expire()
        changes += state.drain()
    restored = _task(*specs)
    for change in changes:
        restored.restore(change.key, change.value)
    assert restored.snapshot() == state.snapshot()


def test_keys_must_be_strings_and_values_json() -> None:
    state = _task(KeyValue("kv"))
    _at(state, 0, 0)
    with pytest.raises(StateError, match="keys are strings"):
        state.stores["kv"].set(42, 1)  # type: ignore[union-attr, arg-type]
    state.stores["kv"].set("k", {1, 2})  # type: ignore[union-attr]
    with pytest.raises(StateError, match="must be JSON"):
        state.drain()


@settings(max_examples=60, deadline=None)
@given(
    events=st.lists(
        st.tuples(st.integers(0, 120_000), st.integers(-3, 5)), min_size=1, max_size=30
    ),
    hop=st.sampled_from([1_000, 5_000, 15_000]),
    probe=st.integers(0, 120_000),
)
def test_window_max_equals_the_largest_window_even_with_negative_amounts(
    events: list[tuple[int, int]], hop: int, probe: int
) -> None:
    state = _task(Window("w", size_ms=60_000, hop_ms=hop, grace_ms=10**9))
    store = state.stores["w"]
    for i, (t, amount) in enumerate(events):
        _at(state, i, t)
        store.add("k", t, amount)  # type: ignore[union-attr]
    expected = max(w.value for w in store.windows("k", probe))  # type: ignore[union-attr]
    assert store.max("k", probe) == expected  # type: ignore[union-attr]


@given(
    store=st.text(min_size=1).filter(lambda s: "\x00" not in s),
    key=st.text(),
    bucket=st.integers(0, 2**53),
)
def test_changelog_keys_are_json_for_any_text(store: str, key: str, bucket: int) -> None:
    from shared.detector.changelog_codec import encode_key

    assert json.loads(encode_key((store, key, bucket))) == [store, key, bucket]


@given(
    store=st.text(min_size=1).filter(lambda s: "\x00" not in s),
    key=st.text(),
    bucket=st.integers(-(2**53), 2**53),
    printable=st.booleans(),
)
def test_changelog_keys_read_back_as_written(
    store: str, key: str, bucket: int, printable: bool
) -> None:
    """decode_key's fast path for the plain form and its JSON path give back the same parts."""
    from shared.detector.changelog_codec import decode_key, encode_key

    if printable:  # the ids and names real keys are made of: the fast path's domain
        store, key = (
            store.encode("ascii", "ignore").decode() or "s",
            key.encode("ascii", "ignore").decode(),
        )
    assert decode_key(encode_key((store, key, bucket))) == [store, key, bucket]
    assert decode_key(encode_key((store, key))) == [store, key]


@pytest.mark.parametrize("value", [b"0", b"17", b"-3", b"2.5", b'{"n":1}', b"[1,2]", b'"x"'])
def test_changelog_values_read_back_as_json_would(value: bytes) -> None:
    from shared.detector.changelog_codec import decode_value

    assert decode_value(value) == json.loads(value)


_STEP = st.tuples(
    st.sampled_from(["a", "b", "c", "d"]),
    st.integers(min_value=0, max_value=30_000),
    st.sampled_from([1, 2, -1, 0.5]),
    st.booleans(),  # the record fails and is rolled back
)


@settings(max_examples=80, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=60), hop=st.sampled_from([1_000, 2_500]))
def test_window_store_matches_a_plain_model_through_undo_expiry_and_restore(
    steps: list[tuple[str, int, float, bool]], hop: int
) -> None:
    """Out-of-order and late records, failed records, expiry and a restore from the changelog
    all give what a plain dict of (key, bucket) -> sum gives, with the same retention rule."""
    spec = Window("w", size_ms=10_000, hop_ms=hop, grace_ms=2_000)
    state = _task(spec)
    store = state.stores["w"]
    model: dict[tuple[str, int], float] = {}
    changes = []
    for offset, (key, at, amount, fails) in enumerate(steps):
        _at(state, offset, at)
        store.add(key, at, amount)  # type: ignore[union-attr]
        if fails:
            state.rollback_record()
        else:
            state.commit_record()
            slot = (key, at - at % hop)
            model[slot] = model.get(slot, 0) + amount
        state.expire()
        horizon = state.stream_time - 10_000 - 2_000
        model = {slot: v for slot, v in model.items() if slot[1] > horizon}
        changes += state.drain()
        assert dict(store.items()) == model  # type: ignore[union-attr]
        assert len(store) == len(model)
        for probe in {"a", "b", "c", "d"}:
            for window in store.windows(probe, at):  # type: ignore[union-attr]
                expected = sum(
                    v for (k, b), v in model.items()
                    if k == probe and window.start <= b < window.end
                )  # fmt: skip
                assert window.value == pytest.approx(expected)
    restored = _task(spec)
    for change in changes:
        restored.restore(change.key, change.value)
    assert restored.snapshot() == state.snapshot()
