"""Read-only views of a cluster for `mesh status` and `mesh describe`: topics, counts, groups."""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import MeshError


@dataclass(frozen=True)
class TopicView:
    """A live topic: partitions, cleanup policy and how many records it holds now."""

    name: str
    partitions: int
    records: int


class ClusterUnreachableError(MeshError):
    """The cluster did not answer in time."""


def topic_views(
    bootstrap: str, names: list[str] | None = None, timeout: float = 10.0
) -> list[TopicView]:
    """Every (or the named) non-internal topic with its record count (high minus low watermark)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "mesh-inspect", "log_level": 2}
    )
    try:
        try:
            metadata = consumer.list_topics(timeout=timeout)
        except KafkaException:
            raise ClusterUnreachableError(
                f"Kafka at {bootstrap} did not answer within {timeout:.0f} s: is it running "
                "(`mesh broker status`)?"
            ) from None
        views = []
        for name in sorted(names if names is not None else metadata.topics):
            topic = metadata.topics.get(name)
            if topic is None or name.startswith("__"):
                continue
            total = 0
            for partition in topic.partitions:
                low, high = _watermarks(consumer, TopicPartition(name, partition), timeout)
                total += high - low
            views.append(TopicView(name, len(topic.partitions), total))
        return views
    finally:
        consumer.close()


def consumer_groups(bootstrap: str, timeout: float = 10.0) -> list[str]:
    """Names of the consumer groups the cluster knows, sorted."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    result = admin.list_consumer_groups(request_timeout=timeout).result()
    return sorted(g.group_id for g in result.valid)


#: Errors a fresh or moving partition gives for a moment; asking again shortly succeeds.
_TRANSIENT = {"NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART"}


def _watermarks(consumer: object, partition: object, timeout: float) -> tuple[int, int]:
    """Low and high offsets of a partition, riding out a leader election for up to ``timeout``."""
    import time

    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(partition, timeout=timeout)  # type: ignore[attr-defined]
            return int(low), int(high)
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() not in _TRANSIENT or time.monotonic() > deadline:
                raise ClusterUnreachableError(
                    f"cannot read offsets of {partition.topic}[{partition.partition}]: "  # type: ignore[attr-defined]
                    f"{error.str()}"
                ) from None
            time.sleep(0.2)
