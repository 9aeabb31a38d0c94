"""Detector state: per-key values with a TTL, and windowed counters/sums.

State belongs to one *task*: the input partition number a record came from (inputs of a
stateful detector are co-partitioned, so partition p of every input shares task p). It is held in
memory, laid out for it: a window store keeps about 200 bytes per active customer (its key
string, one small tuple of buckets, two index slots), so a million customers take about 200 MB
of the instance's ~400 MB (docs/benchmarks.md, "State at scale", which also says where the rest
goes); swap :class:`TaskState`'s dicts for an on-disk store if a detector outgrows that.

Every write is remembered as *dirty*, together with the input record (topic, offset) that caused
it. The runtime drains the dirty keys once per batch into the detector's compacted changelog
(the last value per key wins within a batch, which keeps the changelog small), and restores a
task from it after a restart or rebalance. A write that a failing record made is undone, so a
record that goes to the dead-letter topic, or is retried, leaves no trace in state.

Time is *stream time*: the largest event time the task has seen. TTLs and window retention are
measured in it, not in wall-clock time, so that a replay gives the same state and the same
alerts, and the harness is deterministic. Expired entries are removed by :meth:`TaskState.expire`,
which writes tombstones to the changelog.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from shared.detector.changelog_codec import decode_key, decode_value, encode_key
from shared.detector.errors import DeclarationError, StateError
from shared.detector.replays import REPLAYS, ReplayGuard
from shared.lineage import Source

#: (input topic, input offset) of the record that caused a write.
Position = tuple[str, int]
_MISSING: Any = object()


@dataclass(frozen=True)
class StoreSpec:
    """Base of the state declarations; ``name`` is what ``ctx`` looks the store up by."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "\x00" in self.name:
            raise DeclarationError(f"state name {self.name!r} must be a non-empty string")


@dataclass(frozen=True)
class KeyValue(StoreSpec):
    """Per-key JSON values; an entry not written for ``ttl_ms`` of stream time expires."""

    ttl_ms: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ttl_ms is not None and (not isinstance(self.ttl_ms, int) or self.ttl_ms <= 0):
            raise DeclarationError(f"state {self.name}: ttl_ms must be a positive int or None")


@dataclass(frozen=True)
class Window(StoreSpec):
    """Per-key sums in windows of ``size_ms``, starting every ``hop_ms`` (tumbling if None).

    Stored as one bucket per hop; a window's value is the sum of its ``size/hop`` buckets. A
    bucket is kept until every window containing it has ended ``grace_ms`` ago in stream time,
    so records up to ``grace_ms`` late still count.
    """

    size_ms: int = 60_000
    hop_ms: int | None = None
    grace_ms: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        hop = self.hop
        if not isinstance(self.size_ms, int) or self.size_ms <= 0:
            raise DeclarationError(f"state {self.name}: size_ms must be a positive int")
        if not isinstance(hop, int) or hop <= 0 or self.size_ms % hop:
            raise DeclarationError(
                f"state {self.name}: hop_ms must be a positive int that divides size_ms"
            )
        if not isinstance(self.grace_ms, int) or self.grace_ms < 0:
            raise DeclarationError(f"state {self.name}: grace_ms must be an int >= 0")

    @property
    def hop(self) -> int:
        return self.size_ms if self.hop_ms is None else self.hop_ms


class WindowValue(NamedTuple):
    """One window of one key: ``[start, end)`` in event-time ms, and its sum."""

    start: int
    end: int
    value: float


class Change(NamedTuple):
    """One changelog update: the encoded key, the JSON value (None = tombstone), its cause."""

    key: bytes
    value: bytes | None
    topic: str
    offset: int


class _Store:
    """Shared plumbing: dirty tracking and per-record undo, reported to the owning task."""

    __slots__ = ("_task", "name")

    def __init__(self, name: str, task: TaskState) -> None:
        self.name = name
        self._task = task


class KeyValueStore(_Store):
    """``get`` / ``set`` / ``delete`` JSON values by string key, with an optional TTL."""

    __slots__ = ("_data", "_last_sweep", "ttl_ms")

    def __init__(self, spec: KeyValue, task: TaskState) -> None:
        super().__init__(spec.name, task)
        self.ttl_ms = spec.ttl_ms
        #: key -> (value, stream time of the last write)
        self._data: dict[str, tuple[Any, int]] = {}
        self._last_sweep = 0

    def get(self, key: str, default: Any = None) -> Any:
        entry = self._data.get(key)
        if entry is None:
            return default
        if self.ttl_ms is not None and self._task.stream_time - entry[1] > self.ttl_ms:
            return default
        return entry[0]

    def set(self, key: str, value: Any) -> None:
        if key.__class__ is not str:
            raise StateError(f"state {self.name}: keys are strings, got {type(key).__name__}")
        self._task._touched(self, key, self._data.get(key, _MISSING))
        self._data[key] = (value, self._task.stream_time)

    def delete(self, key: str) -> None:
        if key in self._data:
            self._task._touched(self, key, self._data[key])
            del self._data[key]

    def __contains__(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def __len__(self) -> int:
        return len(self._data)

    def items(self) -> Iterator[tuple[str, Any]]:
        """Live entries (expired ones left out even before they are swept)."""
        for key in list(self._data):
            value = self.get(key, _MISSING)
            if value is not _MISSING:
                yield key, value

    # runtime side ---------------------------------------------------------------------------
    def _undo(self, key: str, old: Any) -> None:
        if old is _MISSING:
            self._data.pop(key, None)
        else:
            self._data[key] = old

    def _encoded(self, key: str) -> tuple[bytes, bytes | None]:
        entry = self._data.get(key)
        value = None if entry is None else _dump({"v": entry[0], "t": entry[1]}, self.name)
        return encode_key((self.name, key)), value

    def _restore(self, parts: list[Any], value: Any) -> None:
        if value is None:
            self._data.pop(parts[1], None)
        else:
            self._data[parts[1]] = (value["v"], value["t"])

    def _expire(self) -> None:
        if self.ttl_ms is None:
            return
        now = self._task.stream_time
        # A full scan costs O(entries): do it at most every ttl/8 of stream time.
        if now - self._last_sweep < self.ttl_ms // 8:
            return
        self._last_sweep = now
        ttl = self.ttl_ms
        for key in [k for k, (_, at) in self._data.items() if now - at > ttl]:
            self._task._touched(self, key, self._data.pop(key), undoable=False)


class WindowStore(_Store):
    """Windowed sums per string key; see :class:`Window`.

    Laid out key first: a key's live buckets are one flat tuple ``(key, start, sum, start, sum,
    ...)``, so the windows around a record are computed from its few buckets instead of probing
    every bucket slot. The layout is chosen for memory, because a store may hold a million keys:
    a tuple of one bucket takes 64 bytes where a dict took 232, bucket starts are shared int
    objects (there are few distinct ones), and the expiry index (bucket -> keys, and a heap of
    bucket starts) keeps plain lists of the one key object the tuple holds (every record brings
    its own copy of the key string; keeping a second copy would cost 65 bytes a bucket). A
    million keys of two buckets each take about 200 MB instead of 660 (docs/benchmarks.md,
    "State at scale").
    """

    __slots__ = ("_by_bucket", "_data", "_heap", "_starts", "grace_ms", "hop_ms", "size_ms")

    def __init__(self, spec: Window, task: TaskState) -> None:
        super().__init__(spec.name, task)
        self.size_ms = spec.size_ms
        self.hop_ms = spec.hop
        self.grace_ms = spec.grace_ms
        #: key -> (key, bucket start, sum, bucket start, sum, ...), oldest bucket first
        self._data: dict[str, tuple[Any, ...]] = {}
        #: bucket start -> keys that got it (a key may repeat; expiry skips what is gone)
        self._by_bucket: dict[int, list[str]] = {}
        self._heap: list[int] = []
        #: bucket start -> the one int object every key's tuple shares for it
        self._starts: dict[int, int] = {}

    def add(self, key: str, at: int, amount: float = 1) -> None:
        """Add ``amount`` (default 1: a counter) for ``key`` at event time ``at``."""
        if key.__class__ is not str:
            raise StateError(f"state {self.name}: keys are strings, got {type(key).__name__}")
        bucket = at - at % self.hop_ms
        held = self._data.get(key)
        if held is not None:
            for i in range(1, len(held), 2):
                if held[i] == bucket:
                    old = held[i + 1]
                    self._task._touched(self, (held[0], bucket), old)
                    self._data[key] = (*held[: i + 1], old + amount, *held[i + 2 :])
                    return
        self._task._touched(self, (key, bucket), _MISSING)
        self._insert(key, held, bucket, amount)

    def _insert(self, key: str, held: tuple[Any, ...] | None, bucket: int, value: Any) -> None:
        """Give ``key`` a bucket it does not hold yet, keeping its buckets in start order."""
        if held is None:
            held = (key,)
        start = self._starts.get(bucket)
        if start is None:
            start = self._starts[bucket] = bucket
            self._by_bucket[bucket] = [held[0]]
            heapq.heappush(self._heap, bucket)
        else:
            self._by_bucket[start].append(held[0])
        i = len(held)
        while i > 1 and held[i - 2] > bucket:
            i -= 2
        self._data[key] = (*held[:i], start, value, *held[i:])

    def _near(self, key: str, at: int) -> tuple[int, list[tuple[int, float]]]:
        """(start of the last window containing ``at``, the key's buckets those windows see)."""
        hop, size = self.hop_ms, self.size_ms
        last = at - at % hop
        held = self._data.get(key)
        if held is None:
            return last, []
        low, high = last - size + hop, last + size - hop
        return last, [
            (held[i], held[i + 1]) for i in range(1, len(held), 2) if low <= held[i] <= high
        ]

    def windows(self, key: str, at: int) -> list[WindowValue]:
        """Every window containing event time ``at``, oldest first (one if tumbling)."""
        hop, size = self.hop_ms, self.size_ms
        last, near = self._near(key, at)
        return [
            WindowValue(start, start + size, sum(v for b, v in near if start <= b < start + size))
            for start in range(last - size + hop, last + hop, hop)
        ]

    def max(self, key: str, at: int) -> float:
        """The largest window sum among the windows containing ``at``."""
        hop, size = self.hop_ms, self.size_ms
        last, near = self._near(key, at)
        if not near:
            return 0
        if len(near) == 1 and near[0][1] >= 0:  # a window holds it; the others, less
            return near[0][1]
        # A window's sum only changes where a bucket enters (start = b - size + hop) or leaves
        # (start = b + hop): probing those starts is exact, and there are few of them.
        first = last - size + hop
        starts = {first}
        for b, _ in near:
            for start in (b - size + hop, b + hop):
                if first < start <= last:
                    starts.add(start)
        return max(sum(v for b, v in near if start <= b < start + size) for start in starts)

    def __len__(self) -> int:
        return (sum(len(held) for held in self._data.values()) - len(self._data)) // 2

    def items(self) -> Iterator[tuple[tuple[str, int], float]]:
        """((key, bucket start), sum) of every bucket held."""
        for key, held in self._data.items():
            for i in range(1, len(held), 2):
                yield (key, held[i]), held[i + 1]

    # runtime side ---------------------------------------------------------------------------
    def _get(self, key: str, bucket: int) -> Any:
        held = self._data.get(key, ())
        for i in range(1, len(held), 2):
            if held[i] == bucket:
                return held[i + 1]
        return None

    def _set(self, key: str, bucket: int, value: Any) -> None:
        """Put ``value`` in the bucket (undo, restore); None or _MISSING removes it."""
        held = self._data.get(key)
        gone = value is _MISSING or value is None
        if held is not None:
            for i in range(1, len(held), 2):
                if held[i] != bucket:
                    continue
                if not gone:
                    self._data[key] = (*held[: i + 1], value, *held[i + 2 :])
                elif len(held) > 3:
                    self._data[key] = (*held[:i], *held[i + 2 :])
                else:
                    del self._data[key]
                return
        if not gone:
            self._insert(key, held, bucket, value)

    def _undo(self, slot: tuple[str, int], old: Any) -> None:
        self._set(slot[0], slot[1], old)

    def _encoded(self, slot: tuple[str, int]) -> tuple[bytes, bytes | None]:
        key, bucket = slot
        value = self._get(key, bucket)
        encoded = None if value is None else _dump(value, self.name)
        return encode_key((self.name, key, bucket)), encoded

    def _restore(self, parts: list[Any], value: Any) -> None:
        self._set(parts[1], parts[2], value)

    def _expire(self) -> None:
        # The last window holding bucket b ends at b + size; keep it grace_ms longer.
        horizon = self._task.stream_time - self.size_ms - self.grace_ms
        heap, data = self._heap, self._data
        while heap and heap[0] <= horizon:
            bucket = heapq.heappop(heap)
            self._starts.pop(bucket, None)
            for key in self._by_bucket.pop(bucket, ()):
                held = data.get(key)
                # Buckets are in start order and older ones expired first: if the key still
                # holds this one, it is its first.
                if held is None or held[1] != bucket:
                    continue
                value = held[2]
                if len(held) > 3:
                    data[key] = (key, *held[3:])
                else:
                    del data[key]
                self._task._touched(self, (key, bucket), value, undoable=False)


#: What holds changelog slots: the declared stores and the replay guard.
_Slots = KeyValueStore | WindowStore | ReplayGuard


def _dump(value: Any, store: str) -> bytes:
    if value.__class__ is int:  # counters: the common case, without the json machinery
        return b"%d" % value
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise StateError(
            f"state {store}: values must be JSON (dict, list, str, number): {exc}"
        ) from exc


class TaskState:
    """The stores of one task (input partition number), with dirty tracking and undo."""

    def __init__(self, specs: tuple[StoreSpec, ...], task: int = 0) -> None:
        self.task = task
        self.stream_time = 0
        #: (topic, offset) of the record being processed; set by the caller.
        self.position: Position = ("", -1)
        self.stores: dict[str, KeyValueStore | WindowStore] = {}
        for spec in specs:
            if isinstance(spec, Window):
                self.stores[spec.name] = WindowStore(spec, self)
            elif isinstance(spec, KeyValue):
                self.stores[spec.name] = KeyValueStore(spec, self)
            else:
                raise DeclarationError(f"unknown state spec {type(spec).__name__}")
        #: the raw sources already counted (replays.py); not a store: kept out of snapshot()
        self.replays = ReplayGuard(self)
        #: (store, slot) -> position of the last write; slot is a key or (key, bucket)
        self._dirty: dict[tuple[_Slots, Any], Position] = {}
        #: (store, slot) -> value before the current record touched it
        self._undo: dict[tuple[_Slots, Any], Any] | None = None

    # called by the stores ------------------------------------------------------------------
    def _touched(
        self,
        store: _Slots,
        slot: Any,
        old: Any,
        *,
        undoable: bool = True,
    ) -> None:
        ref = (store, slot)
        self._dirty[ref] = self.position
        if undoable and self._undo is not None and ref not in self._undo:
            self._undo[ref] = old

    # called by the harness / runtime -------------------------------------------------------
    def begin(self, topic: str, offset: int, event_time: int | None) -> None:
        """Start one record: remember its position, advance stream time, open an undo log."""
        self.position = (topic, offset)
        if event_time is not None and event_time > self.stream_time:
            self.stream_time = event_time
        self._undo = {}

    def replayed(self, topic: str, offset: int, source: Source) -> bool:
        """Whether the record at ``offset`` of ``topic`` is a copy of a raw record this task
        counted already (ingest routed it again: replays.py); if not, its source is noted."""
        self.position = (topic, offset)
        return self.replays.seen_before(source)

    def commit_record(self) -> None:
        self._undo = None

    def rollback_record(self) -> None:
        """Undo every write of the current record (it failed: retried or dead-lettered)."""
        for (store, slot), old in (self._undo or {}).items():
            store._undo(slot, old)
        self._undo = None

    def expire(self) -> None:
        """Drop entries past their TTL / window retention (tombstones in the next drain)."""
        for store in self.stores.values():
            store._expire()

    def drain(self) -> list[Change]:
        """The changelog updates since the last drain, one per touched slot."""
        changes = []
        for (store, slot), (topic, offset) in self._dirty.items():
            key, value = store._encoded(slot)
            changes.append(Change(key, value, topic, offset))
        self._dirty.clear()
        return changes

    def forget_changes(self) -> None:
        """Drop the changes since the last drain unwritten: a replay that keeps no changelog
        (the backtest) would otherwise hold every slot it touched."""
        self._dirty.clear()

    def restore(self, key: bytes, value: bytes | None) -> None:
        """Apply one changelog update (the caller filters by committed offset)."""
        parts = decode_key(key)
        if parts[0] == REPLAYS:
            self.replays._restore(parts, None if value is None else decode_value(value))
            return
        store = self.stores.get(parts[0])
        if store is None:  # a store the detector no longer declares
            return
        store._restore(parts, None if value is None else decode_value(value))

    def snapshot(self) -> dict[str, dict[Any, Any]]:
        """Every store's live content, for tests and the harness."""
        return {name: dict(store.items()) for name, store in self.stores.items()}
