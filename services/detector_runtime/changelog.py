"""The state changelog: write a batch's state changes, and restore a task from them.

One compacted topic per detector, one partition per input partition number. Each update's key is
the store slot, its value the JSON value (None = tombstone), and two headers say which input
record caused it: ``mesh.source.topic`` and ``mesh.source.offset``. Restore reads the partition
from the beginning and applies only updates whose source offset is below the input's committed
offset: an update written by a batch that crashed before its commit is ignored, because that batch
will be processed again and write it again. So reprocessed records never count twice.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, TopicPartition

from shared.detector import Change, TaskState
from shared.kafka.changelog import partition_bounds, replay_partitions
from shared.kafka.config import consumer_config
from shared.kafka.delivery_tracker import DeliveryTracker
from shared.settings import Settings

if TYPE_CHECKING:
    from services.detector_runtime.config import RuntimeConfig

log = logging.getLogger(__name__)

SOURCE_TOPIC = "mesh.source.topic"
SOURCE_OFFSET = "mesh.source.offset"


def write_changes(
    producer: Any, topic: str, partition: int, changes: list[Change], tracker: DeliveryTracker
) -> int:
    """Produce ``changes`` to ``topic[partition]``; returns how many were sent.

    ``producer`` reports failed deliveries only (``delivery.report.only.error``): the commit's
    flush is what says every update was acknowledged, :meth:`DeliveryTracker.on_error` what says
    one was not."""
    produce, failed = producer.produce, tracker.on_error
    for change in changes:
        headers = [(SOURCE_TOPIC, _topic_bytes(change.topic)),
                   (SOURCE_OFFSET, b"%d" % change.offset)]  # fmt: skip
        while True:
            try:
                produce(topic, change.value, change.key, partition=partition,
                        headers=headers, on_delivery=failed)  # fmt: skip
                break
            except BufferError:
                producer.poll(0.05)
    return len(changes)


@functools.lru_cache(maxsize=64)
def _topic_bytes(name: str) -> bytes:
    """A source topic's name as a header value, encoded once (every update carries one)."""
    return name.encode()


@dataclass
class RestoreStats:
    """What one restore did (logged, and exposed for metrics)."""

    partition: int
    #: Offsets on the changelog partition when the restore began, and how many of them are
    #: behind it so far (compaction leaves gaps, so ``read`` may stay below ``total``).
    total: int = 0
    covered: int = 0
    read: int = 0
    applied: int = 0
    ignored: int = 0
    seconds: float = 0.0


def restore_tasks(
    consumer: Any,
    topic: str,
    states: dict[int, TaskState],
    committed: dict[int, dict[str, int]],
    stats: dict[int, RestoreStats],
    progress_every: int = 100_000,
) -> None:
    """Rebuild each of ``states`` (by partition number) from ``topic``, keeping updates below
    ``committed``, all partitions read at once by ``consumer`` (the caller's own; it closes it).

    Every partition's ``seconds`` is the whole restore's: they are read together.
    ``committed[number]`` maps an input topic to its committed offset for that partition number
    (an input with nothing committed is absent: none of its updates apply). ``stats`` gets a
    :class:`RestoreStats` per number, filled as the restore goes (read by the readiness gauge).
    """
    started = time.monotonic()
    bounds = partition_bounds(consumer, topic, states)
    lows = {number: low for number, (low, _) in bounds.items()}
    for number, (low, high) in bounds.items():
        stats.setdefault(number, RestoreStats(number)).total = max(high - low, 0)
    log.info("restoring %s %s: %d update(s) to read", topic, sorted(states),
             sum(s.total for s in stats.values()))  # fmt: skip

    def apply(message: Any) -> None:
        number = message.partition()
        counts = stats[number]
        counts.covered = message.offset() + 1 - lows[number]
        counts.read += 1
        source_topic, source_offset = _source(message.headers())
        limit = committed[number].get(source_topic)
        if limit is None or source_offset >= limit:
            counts.ignored += 1
            return
        states[number].restore(message.key(), message.value())
        counts.applied += 1
        if counts.read % progress_every == 0:
            log.info("restoring %s[%d]: %d of %d", topic, number, counts.read, counts.total)

    replay_partitions(consumer, topic, states, apply, bounds)
    seconds = time.monotonic() - started
    for number in states:
        counts = stats[number]
        counts.covered, counts.seconds = counts.total, seconds
        if counts.total == 0:
            continue  # an empty changelog partition: nothing to say
        log.info(
            "restored %s[%d]: %d applied, %d ignored (beyond the committed offset) in %.2f s",
            topic,
            number,
            counts.applied,
            counts.ignored,
            seconds,
        )


def restore_partitions(
    consumer: Any,
    settings: Settings,
    config: RuntimeConfig,
    states: dict[int, TaskState],
    stats: dict[int, RestoreStats],
) -> None:
    """Rebuild the state of input partitions ``states`` (by number) before the runner takes
    them on: the committed input offsets come from the group's ``consumer``, the changelog is
    read by a consumer of its own (group ``<group>.restore``, so the group's members never
    wait on it), every partition at once."""

    wanted = [TopicPartition(topic, number)
              for number in states for topic in config.topics.inputs.values()]  # fmt: skip
    committed: dict[int, dict[str, int]] = {number: {} for number in states}
    for tp in consumer.committed(wanted, timeout=30) if wanted else ():
        if tp.offset >= 0:
            committed[tp.partition][tp.topic] = tp.offset
    restore_config = consumer_config(
        settings, f"{config.group_id}.restore", **{"client.id": f"{config.instance_id}-restore"}
    )
    reader = Consumer(restore_config)
    try:
        restore_tasks(reader, config.topics.changelog, states, committed, stats)
    finally:
        reader.close()


def _source(headers: list[tuple[str, bytes]] | None) -> tuple[str, int]:
    topic, offset = "", -1
    for key, value in headers or ():
        if key == SOURCE_TOPIC:
            topic = _topic_name(value)
        elif key == SOURCE_OFFSET:
            offset = int(value)
    return topic, offset


@functools.lru_cache(maxsize=64)
def _topic_name(raw: bytes) -> str:
    """A source topic's name; a changelog names the same few topics a million times."""
    return raw.decode()
