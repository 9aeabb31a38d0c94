"""Run a detector over a list of records without a broker: alerts and state come back.

This is how detector authors test: the harness goes through the same :class:`Task` code as the
runtime (state, undo on failure, retries, TTL expiry, changelog), so a detector that passes here
behaves the same in production. Records are spread over ``partitions`` tasks by customer id, the
way the Kafka key spreads them, and every alert is checked against the Avro ``alert`` schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from shared.detector.declaration import Detector
from shared.detector.state import Change
from shared.detector.task import RetryPolicy, Task
from shared.kafka.partitioner import partition_for

#: A fixed detection time, so harness output is reproducible (2023-11-14T22:13:20Z).
FIXED_CLOCK_MS = 1_700_000_000_000


@dataclass
class Failure:
    """A record ``detect`` could not process (the runtime would dead-letter it)."""

    index: int
    record_type: str
    record: dict[str, Any]
    error: BaseException
    attempts: int


@dataclass
class HarnessResult:
    alerts: list[dict[str, Any]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    #: task (partition) -> store name -> content
    state: dict[int, dict[str, dict[Any, Any]]] = field(default_factory=dict)
    #: every changelog update the runtime would have written, in order
    changelog: list[Change] = field(default_factory=list)
    tasks: dict[int, Task] = field(default_factory=dict)

    def store(self, name: str) -> dict[Any, Any]:
        """One store's content merged over all tasks (keys never span tasks)."""
        merged: dict[Any, Any] = {}
        for stores in self.state.values():
            merged.update(stores.get(name, {}))
        return merged


def run(
    detector: Detector,
    records: Iterable[tuple[str, dict[str, Any]]],
    *,
    partitions: int = 1,
    batch_size: int = 500,
    clock: Callable[[], int] = lambda: FIXED_CLOCK_MS,
    retry: RetryPolicy | None = None,
    check_alerts: bool = True,
    raise_errors: bool = False,
) -> HarnessResult:
    """Feed ``(record_type, record)`` pairs to ``detector`` in order; see the module doc.

    Expiry and changelog drains happen every ``batch_size`` records, as the runtime does per
    batch. With ``raise_errors`` the first failing record raises instead of being collected.
    """
    encode = _alert_encoder() if check_alerts else None
    result = HarnessResult()
    tasks: dict[int, Task] = {}
    offsets: dict[tuple[str, int], int] = {}

    def flush() -> None:
        for task in tasks.values():
            task.state.expire()
            result.changelog.extend(task.state.drain())

    for index, (record_type, record) in enumerate(records):
        if record_type not in detector.inputs:
            continue
        partition = partition_for(str(record.get("customer_id")).encode(), partitions)
        task = tasks.get(partition)
        if task is None:
            task = tasks[partition] = Task(
                detector, partition, clock=clock, retry=retry, sleep=lambda _: None
            )
        topic = f"records.{record_type}"
        offset = offsets.get((topic, partition), 0)
        offsets[(topic, partition)] = offset + 1
        outcome = task.process(record_type, record, topic, offset)
        if outcome.error is not None:
            if raise_errors:
                raise outcome.error
            result.failures.append(
                Failure(index, record_type, record, outcome.error, outcome.attempts)
            )
        for alert in outcome.alerts:
            if encode is not None:
                encode(alert)
            result.alerts.append(alert)
        if (index + 1) % batch_size == 0:
            flush()
    flush()
    result.tasks = tasks
    result.state = {p: t.state.snapshot() for p, t in sorted(tasks.items())}
    return result


def _alert_encoder() -> Callable[[dict[str, Any]], bytes]:
    from shared.avro import AvroSerializer

    return AvroSerializer("alert").encode
