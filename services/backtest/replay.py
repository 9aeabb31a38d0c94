"""The replay: a detector's ``detect()`` over history rows, through the runtime's own Task code.

This is the part of a backtest that runs inside Spark (one call per Spark partition, over Arrow
batches) and that a unit test runs without Spark. It gets rows already in the order the streaming
runtime would have seen them: grouped by Kafka partition number (a stateful detector's task), in
offset order within each topic partition (see :mod:`services.backtest.inputs` for the order of a
multi-input detector). Each partition number gets a fresh :class:`Task`, exactly as a live task
starts from an empty store at offset 0, so state, TTLs and windows evolve as they did live and
every alert has the id it had live (ids hash detector, rule, record type and record id).

What cannot be the same: ``detection_time`` is the record's Kafka timestamp (the moment it was
there to be read) instead of a wall clock, and a record that fails ``detect`` is counted (live it
would be dead-lettered) instead of written anywhere.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from shared.detector.declaration import Detector
from shared.detector.task import RetryPolicy, Task

#: Replay columns that are not record fields (the record's fields keep their own names). The
#: record type is only a column when the detector has more than one input: a string per row
#: costs the JVM and Python more than the detector's own fields (docs/benchmarks.md).
RECORD_TYPE, PARTITION, TOPIC, OFFSET, TIMESTAMP_MS = (
    "_record_type", "_partition", "_topic", "_offset", "_timestamp_ms",
)  # fmt: skip
#: Stream time advances and expired state is dropped every this many records of a task, as the
#: runtime does once per batch (a batch is 500 to a few thousand records).
EXPIRE_EVERY = 1000
#: A retried record is retried at once: there is no outside service to wait for in a replay.
NO_WAIT_RETRY = RetryPolicy(retries=3, backoff_s=0.0, max_backoff_s=0.0)

#: The alert columns mapInArrow returns (times as epoch ms; the caller makes them timestamps).
ALERT_ARROW_SCHEMA = pa.schema([
    ("alert_id", pa.string()), ("detector", pa.string()), ("detector_version", pa.string()),
    ("rule", pa.string()), ("severity", pa.string()), ("score", pa.float64()),
    ("reason", pa.string()), ("customer_id", pa.string()), ("source_record_id", pa.string()),
    ("source_topic", pa.string()), ("source_partition", pa.int32()),
    ("source_offset", pa.int64()), ("event_time", pa.int64()), ("detection_time", pa.int64()),
    ("evidence", pa.map_(pa.string(), pa.string())),
])  # fmt: skip
#: The same, as the DDL string Spark's mapInArrow takes.
ALERT_DDL = (
    "alert_id string, detector string, detector_version string, rule string, severity string, "
    "score double, reason string, customer_id string, source_record_id string, "
    "source_topic string, source_partition int, source_offset bigint, event_time bigint, "
    "detection_time bigint, evidence map<string,string>"
)


@dataclass
class ReplayCounts:
    """What one replay saw: records fed to ``detect``, records it failed on, and one example."""

    records: int = 0
    failures: int = 0
    first_failure: str = ""


@dataclass(frozen=True)
class RecordShape:
    """Which columns of a replay row are the record of each type, and which hold Avro maps
    (Arrow hands a map over as a list of pairs; ``detect`` sees a dict, as live)."""

    fields: Mapping[str, Sequence[str]]
    maps: Mapping[str, Sequence[str]] = field(default_factory=dict)


def replay(
    detector: Detector,
    batches: Iterable[pa.RecordBatch],
    shape: RecordShape,
    counts: ReplayCounts | None = None,
) -> Iterator[pa.RecordBatch]:
    """Feed every row of ``batches`` to ``detect``; yield the alerts of each batch as Arrow.

    A stateful detector's rows must come partition by partition (each partition's task is
    dropped when the next begins); a stateless one's may come in any order."""
    counts = counts if counts is not None else ReplayCounts()
    timestamp = [0]
    tasks: dict[int, Task] = {}
    stateful = detector.stateful
    only_type = detector.inputs[0] if len(detector.inputs) == 1 else None
    task: Task | None = None
    seen = 0
    for batch in batches:
        columns = batch.to_pydict()
        partitions = columns[PARTITION]
        types = columns.get(RECORD_TYPE) or [only_type] * len(partitions)
        topics, offsets, times = columns[TOPIC], columns[OFFSET], columns[TIMESTAMP_MS]
        records = _records(columns, types, shape)
        alerts: list[dict[str, Any]] = []
        rows = zip(types, records, partitions, topics, offsets, times, strict=True)
        for kind, record, partition, topic, offset, at in rows:
            if task is None or task.partition != partition:
                if stateful:  # the previous partition is done: its state can go
                    tasks.clear()
                task = tasks.get(partition)
                if task is None:
                    task = tasks[partition] = Task(
                        detector, partition, clock=lambda: timestamp[0], retry=NO_WAIT_RETRY,
                        sleep=lambda _: None,
                    )  # fmt: skip
                seen = 0
            timestamp[0] = at
            outcome = task.process(kind, record, topic, offset)
            if outcome.alerts:
                alerts.extend(outcome.alerts)
            elif outcome.error is not None:
                counts.failures += 1
                counts.first_failure = counts.first_failure or (
                    f"{topic}[{partition}]@{offset}: "
                    f"{type(outcome.error).__name__}: {outcome.error}"
                )
            if stateful:
                seen += 1
                if seen % EXPIRE_EVERY == 0:
                    task.state.expire()
                    task.state.forget_changes()
        counts.records += len(records)
        if alerts:
            yield pa.RecordBatch.from_pylist(alerts, schema=ALERT_ARROW_SCHEMA)


def _records(
    columns: dict[str, list[Any]], types: list[str], shape: RecordShape
) -> list[dict[str, Any]]:
    """Each row's record as ``detect`` sees it live: its type's fields only, maps as dicts."""
    kinds = set(types)
    if len(kinds) == 1:  # a single-input detector: every row is of one type
        (kind,) = kinds
        return _typed(kind, [columns[f] for f in shape.fields[kind]], shape, len(types))
    records: list[dict[str, Any]] = [{}] * len(types)
    for kind in kinds:
        rows = [i for i, t in enumerate(types) if t == kind]
        values = [[columns[f][i] for i in rows] for f in shape.fields[kind]]
        for i, record in zip(rows, _typed(kind, values, shape, len(rows)), strict=True):
            records[i] = record
    return records


def _typed(
    kind: str, values: list[list[Any]], shape: RecordShape, count: int
) -> list[dict[str, Any]]:
    if not values:  # no field read at all: an empty record per row
        return [{} for _ in range(count)]
    rows = _dict_builder(tuple(shape.fields[kind]))(*values)
    for name in shape.maps.get(kind, ()):
        for row in rows:
            pairs = row[name]
            row[name] = {} if pairs is None else dict(pairs)
    return rows


@functools.cache
def _dict_builder(names: tuple[str, ...]) -> Callable[..., list[dict[str, Any]]]:
    """``build(column_a, column_b, ...)`` -> one dict per row, keyed by ``names``: a dict display
    compiled for these names, 1.6x as fast as ``dict(zip(names, row))`` per row (the dicts are
    most of the replay's own time; docs/benchmarks.md). Names enter the code only as ``repr``
    literals; the columns are positional arguments."""
    columns = [f"c{i}" for i in range(len(names))]
    values = [f"v{i}" for i in range(len(names))]
    display = ", ".join(f"{name!r}: {value}" for name, value in zip(names, values, strict=True))
    source = (
        f"def build({', '.join(columns)}):\n"
        f"    return [{{{display}}} for {', '.join(values)}, in zip({', '.join(columns)})]\n"
    )
    scope: dict[str, Any] = {}
    exec(compile(source, f"<replay dicts of {len(names)} fields>", "exec"), scope)
    return scope["build"]  # type: ignore[no-any-return]
