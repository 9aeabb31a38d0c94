"""The generation of each consumer group, read from the group coordinator's own log.

A rebalance is what one detector's deploy must never cause in another detector's group, and the
broker counts rebalances in the group's generation. The Admin API does not return it (confluent-
kafka 2.16's ``describe_consumer_groups`` has no generation), but the coordinator persists every
group's state as records in the internal ``__consumer_offsets`` topic, so we read it from there.

Record layout (Kafka 4.1 message definitions under ``group-coordinator/.../common/message``):
the key is an int16 record type followed by the key struct, the value an int16 value version
followed by the value struct; a null value (tombstone) means the group was deleted.

* type 0 and 1: offset commits; skipped.
* type 2, ``GroupMetadataKey``: a classic-protocol group. Key: group id (int16-length string).
  ``GroupMetadataValue`` starts with protocolType (string) then generation (int32). Versions 0-3
  are not flexible (int16-length string); version 4 is flexible (compact string, an unsigned
  varint of length + 1). Kafka 4.1.1 writes version 3.
* type 3, ``ConsumerGroupMetadataKey``: a KIP-848 ("consumer" protocol) group. Key: group id.
  ``ConsumerGroupMetadataValue`` (flexible from version 0) starts with the group epoch (int32),
  which plays the generation's part: it grows on every change of the target assignment.
* Any other type (share and streams groups, member and assignment records): skipped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from shared.errors import MeshError
from shared.kafka.inspect import ClusterUnreachableError, cluster_metadata, watermarks
from shared.kafka.wire import Reader

OFFSETS_TOPIC = "__consumer_offsets"

#: Record types (the key's leading int16) that carry a group's generation or epoch.
CLASSIC_GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3

#: First GroupMetadataValue version that encodes strings compactly (KIP-915).
_FIRST_FLEXIBLE_GROUP_METADATA_VALUE = 4


class CorruptGroupRecordError(MeshError):
    """A ``__consumer_offsets`` record is shorter than its declared layout."""


def decode_group_metadata(key: bytes, value: bytes | None) -> tuple[str, int | None] | None:
    """``(group, generation)`` from one ``__consumer_offsets`` record; None if it is no group's.

    The generation is None for a tombstone (the group was deleted). For a KIP-848 consumer group
    it is the group epoch.
    """
    reader = Reader(key, CorruptGroupRecordError, "record")
    record_type = reader.int16()
    if record_type not in (CLASSIC_GROUP_METADATA, CONSUMER_GROUP_METADATA):
        return None
    group = reader.string(compact=False)
    if group is None:
        raise CorruptGroupRecordError("a group metadata key holds a null group id")
    if value is None:
        return group, None
    reader = Reader(value, CorruptGroupRecordError, "record")
    version = reader.int16()
    if record_type == CLASSIC_GROUP_METADATA:
        reader.string(compact=version >= _FIRST_FLEXIBLE_GROUP_METADATA_VALUE)  # protocolType
    return group, reader.int32()


def group_generations(
    bootstrap: str, groups: Collection[str] | None = None, timeout: float = 30.0
) -> dict[str, int]:
    """The latest generation of every (or each named) live group, as the coordinator stored it.

    Reads each ``__consumer_offsets`` partition from its start up to the high watermark it had
    when this call began, so the answer is at least as new as the call. The coordinator writes
    a classic group's record once the group is stable again (after SyncGroup), not when a
    rebalance starts: callers waiting for a rebalance should ask again until it shows.
    Raises :class:`ClusterUnreachableError` if the reading takes longer than ``timeout``.
    """

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            # Required by librdkafka even for assign(); nothing is ever committed under it.
            "group.id": f"mesh-generations-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            # read_committed would stop at an open transactional offset commit and never end.
            "isolation.level": "read_uncommitted",
            "log_level": 2,
        }
    )
    deadline = time.monotonic() + timeout
    try:
        ends = _start_ends(consumer, bootstrap, timeout)
        if not ends:
            return {}
        consumer.assign([TopicPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p in ends])
        latest = _read_until(consumer, ends, deadline, bootstrap)
    finally:
        consumer.close()
    return {
        group: generation
        for group, generation in sorted(latest.items())
        if generation is not None and (groups is None or group in groups)
    }


def _start_ends(consumer: Any, bootstrap: str, timeout: float) -> dict[int, int]:
    """High watermark of each non-empty ``__consumer_offsets`` partition (none before any group)."""

    topic = cluster_metadata(consumer, bootstrap, timeout).topics.get(OFFSETS_TOPIC)
    if topic is None:
        return {}
    ends = {}
    for partition in topic.partitions:
        low, high = watermarks(consumer, TopicPartition(OFFSETS_TOPIC, partition), timeout)
        if high > low:
            ends[partition] = high
    return ends


def _read_until(
    consumer: Any, ends: dict[int, int], deadline: float, bootstrap: str
) -> dict[str, int | None]:
    """Decode records until every partition reached its end; the last word on each group wins."""

    latest: dict[str, int | None] = {}
    pending = set(ends)
    last_error = "none"
    while pending:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ClusterUnreachableError(
                f"reading {OFFSETS_TOPIC} at {bootstrap} did not finish in time: partitions "
                f"{sorted(pending)} never reached their end (last client error: {last_error})"
            )
        message = consumer.poll(min(remaining, 1.0))
        if message is None:
            continue
        error = message.error()
        if error is not None:
            # End of partition: the fetch reached a high watermark at least as new as ours.
            if error.code() == KafkaError._PARTITION_EOF:
                pending.discard(message.partition())
            else:
                last_error = error.str()  # librdkafka retries on its own; we only report it
            continue
        key = message.key()
        decoded = decode_group_metadata(key, message.value()) if key is not None else None
        if decoded is not None:
            group, generation = decoded
            latest[group] = generation
        if message.offset() >= ends[message.partition()] - 1:
            pending.discard(message.partition())
    return latest
