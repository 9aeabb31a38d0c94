"""``ctx``: what a detector function sees besides the record.

One Context exists per task and is re-pointed at each record (no allocation per record). It gives
the detector its state stores and a way to build alerts about the current record; where the
record came from is there for evidence, not for control flow.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from shared.detector.alerts import build_alert
from shared.detector.errors import StateError
from shared.detector.state import KeyValueStore, TaskState, WindowStore


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class DetectorIdentity(Protocol):
    """What ``ctx`` needs of its detector's declaration (a :class:`Detector` is one). A
    protocol, not an import: the declaration types ``detect(record, ctx)`` with this module's
    :class:`Context`, so this module may not import the declaration back (no cycles)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def stores(self) -> Mapping[str, object]: ...


class Context:
    """The detector's view of the current record: state, alert building, source coordinates."""

    __slots__ = (
        "_clock",
        "_detector",
        "_state",
        "offset",
        "partition",
        "record",
        "record_type",
        "topic",
    )

    def __init__(
        self,
        detector: DetectorIdentity,
        state: TaskState,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._detector = detector
        self._state = state
        self._clock = clock
        self.record: Mapping[str, Any] = {}
        self.record_type = ""
        self.topic = ""
        self.partition = state.task
        self.offset = -1

    @property
    def detector_name(self) -> str:
        return self._detector.name

    @property
    def stream_time(self) -> int:
        """The largest event time this task has seen (what TTLs and windows are measured in)."""
        return self._state.stream_time

    def kv(self, name: str) -> KeyValueStore:
        """The key-value store declared as ``KeyValue(name, ...)``."""
        store = self._state.stores.get(name)
        if not isinstance(store, KeyValueStore):
            raise StateError(self._unknown(name, "KeyValue"))
        return store

    def window(self, name: str) -> WindowStore:
        """The windowed store declared as ``Window(name, ...)``."""
        store = self._state.stores.get(name)
        if not isinstance(store, WindowStore):
            raise StateError(self._unknown(name, "Window"))
        return store

    def alert(
        self,
        rule: str,
        *,
        severity: str,
        score: float,
        reason: str,
        evidence: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An Alert about the current record (return or yield it from ``detect``)."""
        return build_alert(
            detector=self._detector.name,
            detector_version=self._detector.version,
            rule=rule,
            severity=severity,
            score=score,
            reason=reason,
            record=self.record,
            record_type=self.record_type,
            source_topic=self.topic,
            source_partition=self.partition,
            source_offset=self.offset,
            detection_time=self._clock(),
            evidence=evidence,
        )

    def _unknown(self, name: str, kind: str) -> str:
        declared = ", ".join(self._detector.stores) or "none"
        return (
            f"detector {self._detector.name} has no {kind} state {name!r} "
            f"(declared: {declared}); add {kind}({name!r}, ...) to its state=[...]"
        )
