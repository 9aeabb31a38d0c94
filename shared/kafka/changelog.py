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
from collections.abc import Callable, Mapping
from typing import Any

from shared.errors import ConfigError
from shared.kafka.inspect import watermarks
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
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    metadata = admin.list_topics(timeout=10).topics
    if topic not in metadata:
        settings = dict(CHANGELOG_CONFIG if config is None else config)
        future = admin.create_topics(
            [NewTopic(topic, partitions, 1, config=settings)], request_timeout=30
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


def replay_partition(
    consumer: Any, topic: str, partition: int, apply: Callable[[Any], None]
) -> tuple[int, int]:
    """Hand every record of ``topic[partition]`` to ``apply``, in log order, up to the end the
    partition had when the replay began; returns (low, high), the offsets it covered.

    ``consumer`` is a consumer of the caller's own (not the group's: the group's members must
    never wait on a replay), which this assigns and leaves assigned; the caller closes it.
    Compaction leaves gaps in the offsets, so the replay ends by position, not by count.
    """
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    low, high = watermarks(consumer, TopicPartition(topic, partition), 10)
    if high <= low:
        return low, high
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    position = low
    while position < high:
        for message in consumer.consume(5000, timeout=1.0):
            if message.error() is not None:
                continue
            position = message.offset() + 1
            if message.offset() < high:  # written since the replay began: not this replay's
                apply(message)
    return low, high
