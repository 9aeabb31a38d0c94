"""Read-only views of a cluster for `mesh status` and `mesh describe`: topics, counts, groups."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from shared.errors import MeshError


@dataclass(frozen=True)
class TopicView:
    """A live topic: partitions, cleanup policy and how many records it holds now."""

    name: str
    partitions: int
    records: int
    #: Records ever written (the partitions' end offsets summed): grows even when old ones expire.
    written: int = 0
    #: Partitions without a leader, left out of the counts (only when asked to skip them).
    offline: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroupLag:
    """How far a consumer group's committed offsets trail the ends of its topics.

    ``partitions`` and ``committed`` are keyed by ``(topic, partition)``; ``committed`` is None
    where the group never committed, and such a partition lags by everything it holds.
    """

    total: int
    partitions: dict[tuple[str, int], int]
    committed: dict[tuple[str, int], int | None]


class ClusterUnreachableError(MeshError):
    """The cluster did not answer in time."""


def topic_views(
    bootstrap: str,
    names: list[str] | None = None,
    timeout: float = 10.0,
    login: Mapping[str, Any] | None = None,
    skip_offline: bool = False,
) -> list[TopicView]:
    """Every (or the named) non-internal topic with its record count (high minus low watermark).
    ``login``: the client settings that log in to a secure cluster (``client_security``).

    ``skip_offline``: a partition without a leader cannot say its offsets; asking it would wait
    out ``timeout`` and then fail the whole answer. What reports on a damaged cluster (`mesh
    status`) counts the others and names those in :attr:`TopicView.offline`."""
    consumer = inspecting_consumer(bootstrap, "mesh-inspect", login)
    try:
        metadata = cluster_metadata(consumer, bootstrap, timeout)
        offline = {
            name: tuple(sorted(n for n, p in topic.partitions.items() if p.leader < 0))
            for name, topic in metadata.topics.items()
        } if skip_offline else {}  # fmt: skip
        found = read_watermarks(consumer, bootstrap, names, timeout, offline)
    finally:
        consumer.close()
    views = []
    for name, partitions in found.items():
        total = sum(high - low for low, high in partitions.values())
        written = sum(high for _, high in partitions.values())
        gone = offline.get(name, ())
        views.append(TopicView(name, len(partitions) + len(gone), total, written, gone))
    return views


def partition_watermarks(
    bootstrap: str,
    names: list[str] | None = None,
    timeout: float = 10.0,
    login: Mapping[str, Any] | None = None,
) -> dict[str, dict[int, tuple[int, int]]]:
    """Low and high watermark of each partition of every (or the named) non-internal topic, by
    topic name (sorted) and partition; a named topic that does not exist is left out."""
    consumer = inspecting_consumer(bootstrap, "mesh-inspect", login)
    try:
        return read_watermarks(consumer, bootstrap, names, timeout)
    finally:
        consumer.close()


def inspecting_consumer(bootstrap: str, group: str, login: Mapping[str, Any] | None) -> Any:
    """A consumer that only asks (metadata, watermarks, ``group``'s committed offsets): it never
    subscribes or commits, so it never joins ``group``. One kept for many questions saves a
    login (a TLS and SCRAM handshake on a secure cluster) per question."""

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": False, "log_level": 2, **(login or {})})  # fmt: skip


def read_watermarks(
    consumer: Any,
    bootstrap: str,
    names: list[str] | None,
    timeout: float,
    skip: Mapping[str, Collection[int]] | None = None,
) -> dict[str, dict[int, tuple[int, int]]]:
    """:func:`partition_watermarks`, asked through ``consumer``; ``skip``: partitions (by
    topic) not to ask."""
    skip = skip or {}

    metadata = cluster_metadata(consumer, bootstrap, timeout)
    found: dict[str, dict[int, tuple[int, int]]] = {}
    for name in sorted(names if names is not None else metadata.topics):
        topic = metadata.topics.get(name)
        if topic is None or name.startswith("__"):
            continue
        found[name] = {
            partition: watermarks(consumer, TopicPartition(name, partition), timeout)
            for partition in sorted(topic.partitions)
            if partition not in skip.get(name, ())
        }
    return found


def consumer_groups(
    bootstrap: str, timeout: float = 10.0, login: Mapping[str, Any] | None = None
) -> list[str]:
    """Names of the consumer groups the cluster knows, sorted."""

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})
    result = admin.list_consumer_groups(request_timeout=timeout).result()
    return sorted(g.group_id for g in result.valid)


def group_members(
    bootstrap: str, group: str, timeout: float = 10.0, login: Mapping[str, Any] | None = None
) -> set[str]:
    """Who is in ``group`` now, as the coordinator sees it: each member's ``group.instance.id``
    (a static member) or client id; a member that died stays here until its session expires."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})
    future = admin.describe_consumer_groups([group], request_timeout=timeout)[group]
    return {m.group_instance_id or m.client_id for m in future.result(timeout=timeout + 5).members}


def group_lag(
    bootstrap: str,
    group: str,
    topics: Collection[str],
    timeout: float = 10.0,
    login: Mapping[str, Any] | None = None,
) -> GroupLag:
    """Records of ``topics`` that ``group`` has not committed yet, per partition and in total.

    A partition's lag is its high watermark minus the group's committed offset. Where the group
    has no committed offset the lag is high minus low watermark: a consumer starting there reads
    everything the partition still holds. Topics that do not exist are skipped.
    """
    consumer = inspecting_consumer(bootstrap, group, login)
    try:
        return read_group_lag(consumer, bootstrap, group, topics, timeout)
    finally:
        consumer.close()


def read_group_lag(
    consumer: Any, bootstrap: str, group: str, topics: Collection[str], timeout: float
) -> GroupLag:
    """:func:`group_lag`, asked through ``consumer``, an :func:`inspecting_consumer` of
    ``group`` (a consumer named after the group reads its committed offsets)."""

    metadata = cluster_metadata(consumer, bootstrap, timeout)
    partitions = [
        TopicPartition(name, partition)
        for name in sorted(set(topics))
        if name in metadata.topics
        for partition in sorted(metadata.topics[name].partitions)
    ]
    committed = _committed_offsets(consumer, group, partitions, timeout)
    lags: dict[tuple[str, int], int] = {}
    for partition in partitions:
        key = (partition.topic, partition.partition)
        low, high = watermarks(consumer, partition, timeout)
        start = committed[key]
        lags[key] = high - (low if start is None else start)
    return GroupLag(sum(lags.values()), lags, committed)


def _committed_offsets(
    consumer: Any, group: str, partitions: list[Any], timeout: float
) -> dict[tuple[str, int], int | None]:
    """The group's committed offset of each partition, None where it never committed."""

    committed: dict[tuple[str, int], int | None] = {
        (p.topic, p.partition): None for p in partitions
    }
    if not partitions:
        return committed
    try:
        answer = consumer.committed(partitions, timeout=timeout)
    except KafkaException as exc:
        raise ClusterUnreachableError(
            f"cannot read the committed offsets of group {group!r}: {exc.args[0].str()}"
        ) from None
    for partition in answer:
        # A partition the group never committed comes back with a negative (invalid) offset.
        if partition.error is None and partition.offset >= 0:
            committed[(partition.topic, partition.partition)] = partition.offset
    return committed


def cluster_metadata(consumer: Any, bootstrap: str, timeout: float) -> Any:
    """The cluster's topic metadata, or a :class:`ClusterUnreachableError` that says what to do."""

    try:
        return consumer.list_topics(timeout=timeout)
    except KafkaException:
        raise ClusterUnreachableError(
            f"Kafka at {bootstrap} did not answer within {timeout:.0f} s: is it running "
            "(`mesh broker status`)?"
        ) from None


#: Errors a fresh or moving partition gives for a moment; asking again shortly succeeds.
_TRANSIENT = {"NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART"}


def watermarks(consumer: Any, partition: Any, timeout: float) -> tuple[int, int]:
    """Low and high offsets of a partition, riding out a leader election for up to ``timeout``."""

    deadline = time.monotonic() + timeout
    while True:
        left = max(deadline - time.monotonic(), 0.1)
        try:
            found = consumer.get_watermark_offsets(partition, timeout=left)
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() not in _TRANSIENT or time.monotonic() > deadline:
                raise ClusterUnreachableError(
                    f"cannot read offsets of {partition.topic}[{partition.partition}]: "
                    f"{error.str()}"
                ) from None
            time.sleep(0.2)
            continue
        if found is None:  # no answer within the time left
            raise ClusterUnreachableError(
                f"cannot read offsets of {partition.topic}[{partition.partition}]: "
                f"no answer within {timeout:.0f} s"
            )
        return int(found[0]), int(found[1])
