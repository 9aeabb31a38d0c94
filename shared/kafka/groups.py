"""Consumer groups changed from outside: a group's offsets set to another's, a group and a
topic deleted. What a shadow version needs (:mod:`control.deploy.shadow`): to start in its own
group exactly where the live group is, and to leave nothing behind when it is abandoned."""

from __future__ import annotations

from collections.abc import Mapping
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
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})
    partitions = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    for future in admin.alter_consumer_group_offsets(request, request_timeout=timeout).values():
        try:
            future.result()
        except KafkaException as error:
            raise MeshError(f"cannot set the offsets of group {group}: {error}") from None


def delete_group(
    bootstrap: str, group: str, login: Mapping[str, Any] | None = None, timeout: float = 10.0
) -> bool:
    """Delete ``group`` (it must have no member); False when there was no such group."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})
    for future in admin.delete_consumer_groups([group], request_timeout=timeout).values():
        try:
            future.result()
        except KafkaException as error:
            if error.args and error.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
                return False
            raise MeshError(f"cannot delete group {group}: {error}") from None
    return True


def delete_topic(
    bootstrap: str, topic: str, login: Mapping[str, Any] | None = None, timeout: float = 30.0
) -> bool:
    """Delete ``topic``; False when there was no such topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})
    for future in admin.delete_topics([topic], request_timeout=timeout).values():
        try:
            future.result()
        except KafkaException as error:
            if error.args and error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return False
            raise MeshError(f"cannot delete topic {topic}: {error}") from None
    return True
