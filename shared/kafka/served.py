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

POLL_S = 0.1


def wait_until_served(admin: Any, topics: Iterable[str], timeout_s: float = 30.0) -> list[str]:
    """Return once the leader of every partition of ``topics`` answers for it, or after
    ``timeout_s``; returns the partitions (``topic[partition]``) still unserved, none if all
    are. A topic missing from the metadata counts as one unserved entry."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    deadline = time.monotonic() + timeout_s
    pending = list(dict.fromkeys(topics))
    unserved: list[str] = []
    while True:
        metadata = admin.list_topics(timeout=max(deadline - time.monotonic(), 1.0)).topics
        partitions = []
        unserved = [f"{t} (not in the metadata)" for t in pending if t not in metadata]
        for topic in pending:
            if topic in metadata:
                for number, partition in metadata[topic].partitions.items():
                    if partition.leader < 0:
                        unserved.append(f"{topic}[{number}]")
                    else:
                        partitions.append(TopicPartition(topic, number))
        if partitions:
            left = max(deadline - time.monotonic(), 1.0)
            futures = admin.list_offsets(
                {p: OffsetSpec.latest() for p in partitions}, request_timeout=left
            )
            for partition, future in futures.items():
                try:
                    future.result()
                except KafkaException:
                    unserved.append(f"{partition.topic}[{partition.partition}]")
        if not unserved or time.monotonic() >= deadline:
            return unserved
        pending = list(dict.fromkeys(u.split("[")[0].split(" ")[0] for u in unserved))
        time.sleep(POLL_S)
