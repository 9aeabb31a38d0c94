"""What the generator yields: one Kafka message plus what the generator knows about it.

The message part (topic suffix, key, value) is all that goes to Kafka. The metadata is the answer
key: whether the record is valid, why not if it is invalid, and which alert it must raise if it is
part of a planted fraud pattern. Tests and the ground-truth file are built from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class PlantedAlert:
    """An alert a reference detector must raise on the record carrying it."""

    detector: str
    rule: str
    customer_id: str
    pattern_id: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordMeta:
    #: Position in the stream (0-based), the only identity of records without a record id.
    index: int
    record_type: str
    record_id: str | None
    customer_id: str | None
    #: Event time written into the value (None if the value has no usable one).
    event_time: int | None
    #: How far behind the virtual clock the event time is (0 = on time).
    lateness_ms: int = 0
    #: The malformation, for deliberately invalid records (a name from malformed.KINDS).
    invalid_kind: str | None = None
    invalid_detail: str | None = None
    #: The planted pattern this valid record belongs to, and the alerts it must raise.
    pattern_id: str | None = None
    alerts: tuple[PlantedAlert, ...] = ()

    @property
    def is_valid(self) -> bool:
        return self.invalid_kind is None

    @property
    def is_planted(self) -> bool:
        return self.pattern_id is not None


class GeneratedRecord(NamedTuple):
    """One message of the stream; unpacks as ``(topic_suffix, key, value, meta)``."""

    topic_suffix: str
    key: bytes | None
    value: bytes
    meta: RecordMeta
