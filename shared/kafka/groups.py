"""Consumer groups changed from outside: a group's offsets set to another's, a group and a
topic deleted. What a shadow version needs (:mod:`control.deploy.shadow`): to start in its own
group exactly where the live group is, and to leave nothing behind when it is abandoned."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from shared.errors import MeshError


def set_group_offsets(
    bootstrap: str,
    group: str,
    offsets: Mapping[tuple[str, int], int],
    login: Mapping[str, Any] | None = None,
    timeout: float = 10.0,
) -> None:
    """Commit ``offsets`` (``(topic, partition) -> next offset``) for ``group``, which must have no
    member; a group that does not exist yet is created with them."""
    if not offsets:
        return
    partitions = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    futures = _admin(bootstrap, login).alter_consumer_group_offsets(
        request, request_timeout=timeout
    )
    _settled(futures, f"set the offsets of group {group}")


def delete_group(
    bootstrap: str, group: str, login: Mapping[str, Any] | None = None, timeout: float = 10.0
) -> bool:
    """Delete ``group`` (it must have no member); False when there was no such group."""
    futures = _admin(bootstrap, login).delete_consumer_groups([group], request_timeout=timeout)
    return _settled(futures, f"delete group {group}", absent=KafkaError.GROUP_ID_NOT_FOUND)


def delete_topic(
    bootstrap: str, topic: str, login: Mapping[str, Any] | None = None, timeout: float = 30.0
) -> bool:
    """Delete ``topic``; False when there was no such topic."""
    futures = _admin(bootstrap, login).delete_topics([topic], request_timeout=timeout)
    return _settled(futures, f"delete topic {topic}", absent=KafkaError.UNKNOWN_TOPIC_OR_PART)


def _admin(bootstrap: str, login: Mapping[str, Any] | None) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})


def _settled(futures: Mapping[Any, Future[Any]], what: str, absent: int | None = None) -> bool:
    """Wait for an admin request; False when it failed only because the thing was not there
    (``absent``, a KafkaError code), a one-line MeshError for any other failure."""
    for future in futures.values():
        try:
            future.result()
        except KafkaException as error:
            if absent is not None and error.args and error.args[0].code() == absent:
                return False
            raise MeshError(f"cannot {what}: {error}") from None
    return True
