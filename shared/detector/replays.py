"""Records a restarted ingest routed again: told apart by their raw source, counted once.

Ingest routes at least once: a kill -9 leaves what it had routed beyond its routing checkpoint's
committed offsets to be routed again when it restarts (docs/architecture.md, "Delivery
guarantees"). A copy routed again is a new record to a detector (a new offset), so a stateful
detector counted it twice: after one ingest kill at 1 000 records/s with a 30 s checkpoint
interval, velocity raised ~3 700 alerts in the next two minutes where chance gives ~300
(docs/benchmarks.md, "Issue 49: the routing checkpoint interval's trade").

Every routed record names its raw source in its lineage headers (``topic:partition:offset`` and
the raw record's timestamp). Ingest writes one raw partition's records in offset order (one
real-time task per raw partition, one idempotent producer: a copy that did not land stops the
ones after it in that output partition), so within one task (input partition) the raw offsets of
one raw partition only rise, except in a replay. The guard keeps, per raw partition, the highest
raw offset the task has taken and the newest raw timestamp among them: a record at or below that
offset and not newer than that timestamp was counted already, and the runtime skips it (counted
as ``records.replayed``).

A raw topic deleted and created again starts its offsets at 0 again; its records are newer than
any the guard has seen (their timestamps are set when they are produced), so they are taken and
the partition's mark starts again from them. Only a producer that stamps a re-created raw topic's
records with older times than the old topic's would see them skipped, until their offsets pass
the old mark.

The marks are state like any other: written to the changelog with the record that moved them and
restored by committed offset, so a detector's own restart neither forgets them nor skips the
records it must process again (their marks' updates came after its committed offsets).
"""

from __future__ import annotations

from typing import Any, Protocol

from shared.detector.changelog_codec import encode_key
from shared.lineage import Source

#: The guard's name in the changelog. A declared store cannot take it: store names may not
#: contain NUL (StoreSpec), so a detector's own state never collides with it.
REPLAYS = "\x00replays"


class _Task(Protocol):
    """What the guard needs of its TaskState (state.py, which imports this module): the
    changelog's dirty tracking."""

    def _touched(self, store: Any, slot: Any, old: Any, *, undoable: bool = True) -> None: ...


class ReplayGuard:
    """One task's marks: raw partition (the header's ``topic:partition`` bytes) -> (highest raw
    offset taken, newest raw timestamp)."""

    __slots__ = ("_marks", "_task", "name")

    def __init__(self, task: _Task) -> None:
        self.name = REPLAYS
        self._task = task
        self._marks: dict[bytes, tuple[int, int]] = {}

    def seen_before(self, source: Source) -> bool:
        """Whether a copy of ``source`` was taken already; if not, it is taken now (its mark
        written to the changelog with the record being processed, never undone: a record that
        fails is dead-lettered once, not again when it is routed again)."""
        mark = self._marks.get(source.partition)
        if mark is None:
            moved = (source.offset, source.timestamp)
        elif source.offset > mark[0]:
            moved = (source.offset, max(source.timestamp, mark[1]))
        elif source.timestamp <= mark[1]:
            return True
        else:  # lower offset, newer than anything seen: the raw topic was created again
            moved = (source.offset, source.timestamp)
        self._task._touched(self, source.partition, mark, undoable=False)
        self._marks[source.partition] = moved
        return False

    def marks(self) -> dict[str, tuple[int, int]]:
        """The marks by raw partition name (for tests and inspection)."""
        return {partition.decode(): mark for partition, mark in self._marks.items()}

    # runtime side (TaskState's drain and restore) ---------------------------------------------
    def _encoded(self, partition: bytes) -> tuple[bytes, bytes | None]:
        mark = self._marks.get(partition)
        value = None if mark is None else b"[%d,%d]" % mark
        return encode_key((REPLAYS, partition.decode("utf-8", "replace"))), value

    def _restore(self, parts: list[Any], value: Any) -> None:
        partition = str(parts[1]).encode()
        if value is None:
            self._marks.pop(partition, None)
        else:
            self._marks[partition] = (int(value[0]), int(value[1]))

    def _undo(self, partition: bytes, old: Any) -> None:  # never undoable: see seen_before
        raise AssertionError("a replay mark is never undone")
