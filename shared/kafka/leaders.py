"""Which partitions have no leader now, as the cluster's metadata says.

A partition without a leader takes no record and serves none: on a cluster that lost a broker,
every partition of a one-replica topic that broker held. Services that wait for such a partition
(:mod:`shared.kafka.parking`) ask this every few seconds, one metadata request; a
failed delivery says whether it failed for want of a leader (:func:`waited_for_a_leader`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

TopicPartitionKey = tuple[str, int]

#: Delivery errors that mean "the partition could not be reached in time", not "the broker said
#: no": the message timed out in the producer (librdkafka retries a leaderless partition until
#: then), or the leader moved or lacked replicas on the last try.
_WAITED_FOR_A_LEADER = frozenset(
    {
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError._TRANSPORT,
        # Taken out of the queue by the owner (``Producer.purge``) because a partition it
        # writes to has no leader: see the detector runtime's delivery wait.
        KafkaError._PURGE_QUEUE,
    }
)


def waited_for_a_leader(err: Any) -> bool:
    """Whether a delivery error says the message's partition was out of reach (no leader until
    the producer's delivery timeout), rather than that the broker refused the message."""
    code = getattr(err, "code", None)
    return callable(code) and code() in _WAITED_FOR_A_LEADER


def offline_partitions(
    client: Any, topics: Iterable[str], timeout_s: float = 5.0
) -> set[TopicPartitionKey]:
    """Every partition of ``topics`` without a leader now (none if the cluster does not
    answer: this asks whether waiting is in vain, and an unanswered question says nothing)."""
    return offline_in(leaders_by_topic(client, timeout_s) or {}, topics)


def offline_in(found: dict[str, dict[int, int]], topics: Iterable[str]) -> set[TopicPartitionKey]:
    """The partitions of ``topics`` without a leader in ``found`` (:func:`leaders_by_topic`)."""
    return {(topic, n) for topic in topics for n, leader in found.get(topic, {}).items()
            if leader < 0}  # fmt: skip


def leaderless(
    client: Any, partitions: Iterable[TopicPartitionKey], timeout_s: float = 5.0
) -> set[TopicPartitionKey]:
    """The ones of ``partitions`` (topic, partition) that have no leader: leader -1, or absent
    from the metadata. ``client`` is any confluent-kafka client (``list_topics``). No answer at
    all (the cluster unreachable) counts every one of them as leaderless."""
    wanted = set(partitions)
    found = leaders_by_topic(client, timeout_s) if wanted else {}
    if found is None:
        return wanted
    return {(topic, n) for topic, n in wanted if found.get(topic, {}).get(n, -1) < 0}


def leaders_by_topic(client: Any, timeout_s: float = 5.0) -> dict[str, dict[int, int]] | None:
    """Each topic's partitions and their leader (-1: none), from one metadata request; None if
    the cluster did not answer."""
    try:
        topics = client.list_topics(timeout=timeout_s).topics
    except KafkaException:
        return None
    return {name: {n: p.leader for n, p in topic.partitions.items()}
            for name, topic in topics.items()}  # fmt: skip
