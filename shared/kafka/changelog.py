"""A service's private changelog: a compacted topic that holds its state, one partition per input
partition, and the replay that rebuilds the state of one partition from it.

A stateful detector keeps its stores this way, the notifier its delivery books. Both create the
topic themselves at start (its partition count follows their input, which the declaration does not
know), and both replay a partition before they take it on, so the state moves with the partition
on a rebalance and survives a restart. The partition count is checked, not repaired: a changelog
whose partitions no longer match the input would hand a partition someone else's state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from shared.errors import ConfigError
from shared.kafka.inspect import watermarks
from shared.kafka.replication import DECLARED, fitted
from shared.kafka.served import wait_until_served

log = logging.getLogger(__name__)

#: Compacted, but an update is kept uncompacted for an hour: a restore that must skip an update
#: written after the last commit (a crash between produce and commit) still finds the one before.
CHANGELOG_CONFIG = {
    "cleanup.policy": "compact",
    "min.compaction.lag.ms": "3600000",
    "segment.ms": "3600000",
}


class CopartitionError(ConfigError):
    """Topics that must have the same partition count do not."""


def ensure_changelog(
    admin: Any, topic: str, partitions: int, config: Mapping[str, str] | None = None
) -> None:
    """Create the compacted changelog with ``partitions`` partitions, or check the one there."""

    cluster = admin.list_topics(timeout=10)
    metadata = cluster.topics
    if topic not in metadata:
        # A changelog is state a restart restores from: as durable as the declared topics.
        durability = fitted(DECLARED, len(cluster.brokers))
        settings = dict(CHANGELOG_CONFIG if config is None else config)
        settings["min.insync.replicas"] = str(durability.min_insync)
        future = admin.create_topics(
            [NewTopic(topic, partitions, durability.replication, config=settings)],
            request_timeout=30,
        )[topic]
        try:
            future.result()
            log.info("created changelog %s (%d partitions, compacted)", topic, partitions)
        except KafkaException as exc:  # another instance created it at the same time
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
        wait_until_served(admin, [topic])
        metadata = admin.list_topics(timeout=10).topics
    have = len(metadata[topic].partitions)
    if have != partitions:
        raise CopartitionError(
            f"changelog {topic} has {have} partitions but the inputs have {partitions}: it must "
            "match them; delete the changelog (state is rebuilt from the inputs' retention) or "
            "restore the inputs' partition count"
        )


#: How long one read of a replay waits for more records. A read returns once it has a full batch
#: or this has passed, so the end of a replay waits this long once, not a second per partition.
REPLAY_WAIT_S = 0.1


def replay_partition(
    consumer: Any, topic: str, partition: int, apply: Callable[[Any], None]
) -> tuple[int, int]:
    """Hand every record of ``topic[partition]`` to ``apply``, in log order, up to the end the
    partition had when the replay began; returns (low, high), the offsets it covered."""
    return replay_partitions(consumer, topic, [partition], apply).get(partition, (0, 0))


def partition_bounds(
    consumer: Any, topic: str, partitions: Iterable[int]
) -> dict[int, tuple[int, int]]:
    """Each partition's (low, high) offsets now: what a replay of it covers."""

    return {number: watermarks(consumer, TopicPartition(topic, number), 10)
            for number in sorted(set(partitions))}  # fmt: skip


def replay_partitions(
    consumer: Any,
    topic: str,
    partitions: Iterable[int],
    apply: Callable[[Any], None],
    bounds: Mapping[int, tuple[int, int]] | None = None,
) -> Mapping[int, tuple[int, int]]:
    """Hand every record of ``topic``'s ``partitions`` to ``apply`` (which reads
    ``message.partition()``), each partition in log order, up to the end it had when the replay
    began; returns each partition's (low, high), the offsets covered.

    All of them are read at once by one assignment: a rebalance that hands an instance eight
    partitions pays for one consumer and one fetch session, not eight in turn. ``consumer`` is
    a consumer of the caller's own (not the group's: the group's members must never wait on a
    replay), which this assigns and leaves assigned; the caller closes it. Compaction leaves
    gaps in the offsets, so a replay ends by position, not by count. ``bounds`` are the
    partitions' (low, high) when the caller already asked (:func:`partition_bounds`).
    """

    if bounds is None:
        bounds = partition_bounds(consumer, topic, partitions)
    # Where each partition's replay stands; a partition leaves once it reaches its end.
    position = {number: low for number, (low, high) in bounds.items() if high > low}
    if not position:
        return bounds
    consumer.assign([TopicPartition(topic, number, OFFSET_BEGINNING) for number in position])
    while position:
        for message in consumer.consume(5000, timeout=REPLAY_WAIT_S):
            number = message.partition()
            if message.error() is not None or number not in position:
                continue
            offset = message.offset()
            if offset < bounds[number][1]:  # written since the replay began: not this replay's
                apply(message)
            if offset + 1 >= bounds[number][1]:
                del position[number]
    return bounds
