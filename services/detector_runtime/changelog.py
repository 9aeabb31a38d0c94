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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from services.detector_runtime.delivery import DeliveryTracker
from shared.detector import Change, TaskState
from shared.kafka.changelog import replay_partition
from shared.kafka.config import consumer_config
from shared.kafka.inspect import watermarks
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


def restore_task(
    consumer_factory: Callable[[], Any],
    topic: str,
    state: TaskState,
    committed: dict[str, int],
    progress_every: int = 100_000,
    stats: RestoreStats | None = None,
) -> RestoreStats:
    """Rebuild ``state`` from ``topic[state.task]``, keeping updates below ``committed``.

    ``committed`` maps an input topic to its committed offset for this partition number (an
    input with nothing committed is absent: none of its updates apply).
    """
    from confluent_kafka import TopicPartition

    partition = state.task
    stats = stats if stats is not None else RestoreStats(partition)
    started = time.monotonic()
    consumer = consumer_factory()
    try:
        low, high = watermarks(consumer, TopicPartition(topic, partition), 10)
        if high <= low:
            return stats
        stats.total = high - low
        log.info("restoring %s[%d]: %d update(s) to read", topic, partition, high - low)

        def apply(message: Any) -> None:
            stats.covered = message.offset() + 1 - low
            stats.read += 1
            source_topic, source_offset = _source(message.headers())
            limit = committed.get(source_topic)
            if limit is None or source_offset >= limit:
                stats.ignored += 1
                return
            state.restore(message.key(), message.value())
            stats.applied += 1
            if stats.read % progress_every == 0:
                log.info("restoring %s[%d]: %d of %d", topic, partition, stats.read, high - low)

        replay_partition(consumer, topic, partition, apply)
        stats.covered = stats.total
        stats.seconds = time.monotonic() - started
        log.info(
            "restored %s[%d]: %d applied, %d ignored (beyond the committed offset) in %.2f s",
            topic,
            partition,
            stats.applied,
            stats.ignored,
            stats.seconds,
        )
        return stats
    finally:
        consumer.close()


def restore_partition(
    consumer: Any,
    settings: Settings,
    config: RuntimeConfig,
    number: int,
    state: TaskState,
    stats: RestoreStats,
) -> None:
    """Rebuild the state of input partition ``number`` before the runner takes it on: the
    committed input offsets come from the group's ``consumer``, the changelog is read by a
    consumer of its own (group ``<group>.restore``, so the group's members never wait on it)."""
    from confluent_kafka import Consumer, TopicPartition

    wanted = [TopicPartition(topic, number) for topic in config.topics.inputs.values()]
    committed = {tp.topic: tp.offset for tp in consumer.committed(wanted, timeout=30)
                 if tp.offset >= 0}  # fmt: skip
    restore_config = consumer_config(
        settings, f"{config.group_id}.restore", **{"client.id": f"{config.instance_id}-restore"}
    )
    factory: Callable[[], Any] = lambda: Consumer(restore_config)  # noqa: E731
    restore_task(factory, config.topics.changelog, state, committed, stats=stats)


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
