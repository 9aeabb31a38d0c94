"""Waiting until new topics are served, not merely announced.

The broker's metadata names a leader for a new partition before that leader has loaded it: for
a moment a produce there is refused (NOT_LEADER_OR_FOLLOWER) while the next one is taken. With an
idempotent producer that moment loses records: its first batch is refused, the second is the
first the partition sees (the broker takes any first sequence from a producer it does not know),
and the client, having an acknowledgement for the later sequence, reports the refused batch as
delivered when it retries it. A CI run lost the first 4 records of one partition this way
(its log began at sequence 4). A partition whose leader answers ListOffsets has loaded its log
and takes produces in order, so every wait after a topic creation ends there.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

POLL_S = 0.1


def wait_until_served(admin: Any, topics: Iterable[str], timeout_s: float = 30.0) -> list[str]:
    """Return once the leader of every partition of ``topics`` answers for it, or after
    ``timeout_s``; returns the partitions (``topic[partition]``) still unserved, none if all
    are. A topic missing from the metadata counts as one unserved entry."""
    deadline = time.monotonic() + timeout_s
    pending = set(topics)
    while True:
        unserved = _unserved(admin, pending, max(deadline - time.monotonic(), 1.0))
        if not unserved or time.monotonic() >= deadline:
            return [label for labels in unserved.values() for label in labels]
        pending = set(unserved)
        time.sleep(POLL_S)


def _unserved(admin: Any, topics: set[str], timeout_s: float) -> dict[str, list[str]]:
    """Per topic of ``topics``, what of it is not served yet (missing, or partitions without a
    leader or whose leader does not answer ListOffsets); topics fully served are left out."""

    metadata = admin.list_topics(timeout=timeout_s).topics
    unserved: dict[str, list[str]] = {}
    asked: list[TopicPartition] = []
    for topic in sorted(topics):
        if topic not in metadata:
            unserved[topic] = [f"{topic} (not in the metadata)"]
            continue
        for number, partition in metadata[topic].partitions.items():
            if partition.leader < 0:
                unserved.setdefault(topic, []).append(f"{topic}[{number}]")
            else:
                asked.append(TopicPartition(topic, number))
    if asked:
        futures = admin.list_offsets(
            {p: OffsetSpec.latest() for p in asked}, request_timeout=timeout_s
        )
        for partition, future in futures.items():
            try:
                future.result()
            except KafkaException:
                unserved.setdefault(partition.topic, []).append(
                    f"{partition.topic}[{partition.partition}]"
                )
    return unserved
