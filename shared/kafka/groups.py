"""Consumer groups changed from outside: a group's offsets set to another's, a group and a
topic deleted. What a shadow version needs (:mod:`control.deploy.shadow`): to start in its own
group exactly where the live group is, and to leave nothing behind when it is abandoned."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from shared.errors import MeshError

#: Answers that only say "not now": the group's coordinator is moving or still loading (a
#: broker's first group request creates __consumer_offsets). The request is sent again.
_TRANSIENT = frozenset({
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
})  # fmt: skip
#: How long to wait before sending a request again after a transient answer.
_RETRY_S = 0.5
#: How much longer than its request timeout an answer is waited for.
_GRACE_S = 5.0

Request = Callable[[AdminClient, float], Mapping[Any, Future[Any]]]


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

    def send(admin: AdminClient, left: float) -> Mapping[Any, Future[Any]]:
        return admin.alter_consumer_group_offsets(request, request_timeout=left)

    _request(bootstrap, login, timeout, f"set the offsets of group {group}", send)


def delete_group(
    bootstrap: str, group: str, login: Mapping[str, Any] | None = None, timeout: float = 10.0
) -> bool:
    """Delete ``group`` once it has no member; False when there was no such group. A member that
    died without leaving (a static one killed) is waited for until ``timeout``: its session
    ends it."""
    return _request(bootstrap, login, timeout, f"delete group {group}",
                    lambda admin, t: admin.delete_consumer_groups([group], request_timeout=t),
                    absent=KafkaError.GROUP_ID_NOT_FOUND,
                    transient={KafkaError.NON_EMPTY_GROUP})  # fmt: skip


def delete_topic(
    bootstrap: str, topic: str, login: Mapping[str, Any] | None = None, timeout: float = 30.0
) -> bool:
    """Delete ``topic``; False when there was no such topic."""
    return _request(bootstrap, login, timeout, f"delete topic {topic}",
                    lambda admin, t: admin.delete_topics([topic], request_timeout=t),
                    absent=KafkaError.UNKNOWN_TOPIC_OR_PART)  # fmt: skip


def _request(
    bootstrap: str,
    login: Mapping[str, Any] | None,
    timeout: float,
    what: str,
    send: Request,
    absent: int | None = None,
    transient: Collection[int] = (),
) -> bool:
    """Send an admin request until it is answered for good within ``timeout``: True when done,
    False when it failed only because the thing was not there (``absent``, a KafkaError code), a
    one-line MeshError for any other failure.

    The client is held in a local for the whole wait: a client dropped while its requests are
    out never resolves their futures (the bound on each wait is a second guard)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})
    deadline = time.monotonic() + timeout
    while True:
        left = max(deadline - time.monotonic(), 1.0)
        try:
            for future in send(admin, left).values():
                future.result(timeout=left + _GRACE_S)
            return True
        except TimeoutError:
            raise MeshError(f"cannot {what}: no answer within {timeout + _GRACE_S:.0f} s") from None
        except KafkaException as error:
            code = error.args[0].code() if error.args else None
            if absent is not None and code == absent:
                return False
            if (code not in _TRANSIENT and code not in transient) or (
                time.monotonic() + _RETRY_S > deadline
            ):
                raise MeshError(f"cannot {what}: {error}") from None
        time.sleep(_RETRY_S)
