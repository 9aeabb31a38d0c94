"""Start-up checks of the topics a detector instance needs, and its changelog topic.

A stateful detector keeps state per input partition number and joins its inputs by key, so
partition p of every input must hold the same customers: the inputs must be co-partitioned
(same partition count, same key, same partitioner). The count is checked here against the live
cluster, before the consumer joins the group, and a mismatch is a one-line refusal.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from services.detector_runtime.config import Topics
from shared.detector import Detector
from shared.errors import ConfigError

log = logging.getLogger(__name__)

#: The changelog is compacted, but an update is kept uncompacted for an hour: restore picks the
#: last update at or below the committed offset, which must still be there when a later,
#: uncommitted update of the same key exists (a crash between produce and commit).
CHANGELOG_CONFIG = {
    "cleanup.policy": "compact",
    "min.compaction.lag.ms": "3600000",
    "segment.ms": "3600000",
}


class CopartitionError(ConfigError):
    """Inputs of a stateful detector have different partition counts."""


def partition_counts(admin: Any, topics: list[str], timeout_s: float = 30.0) -> dict[str, int]:
    """Partition count of each topic; missing topics are a ConfigError naming them."""
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(timeout=10).topics
        missing = [t for t in topics if t not in metadata or metadata[t].error is not None]
        if not missing:
            return {t: len(metadata[t].partitions) for t in topics}
        if time.monotonic() > deadline:
            raise ConfigError(
                f"input topic(s) {', '.join(missing)} do not exist: run `mesh topics apply` "
                "or pass --input TYPE=TOPIC"
            )
        time.sleep(0.5)


def check_topology(admin: Any, detector: Detector, topics: Topics, wait_s: float = 30.0) -> int:
    """Check the inputs (and co-partitioning if stateful); returns their partition count."""
    counts = partition_counts(admin, list(topics.inputs.values()), wait_s)
    if detector.stateful and len(set(counts.values())) > 1:
        detail = ", ".join(f"{t} has {n}" for t, n in counts.items())
        raise CopartitionError(
            f"stateful detector {detector.name} joins its inputs by key, so they must be "
            f"co-partitioned (same partition count): {detail}; give them one count in "
            "infra/topics.yaml and recreate the topics"
        )
    return max(counts.values())


def ensure_changelog(admin: Any, topic: str, partitions: int) -> None:
    """Create the compacted changelog with one partition per input partition, or check it."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    metadata = admin.list_topics(timeout=10).topics
    if topic not in metadata:
        future = admin.create_topics(
            [NewTopic(topic, partitions, 1, config=CHANGELOG_CONFIG)], request_timeout=30
        )[topic]
        try:
            future.result()
            log.info("created changelog %s (%d partitions, compacted)", topic, partitions)
        except KafkaException as exc:  # another instance created it at the same time
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
        _wait_for_leaders(admin, topic)
        metadata = admin.list_topics(timeout=10).topics
    have = len(metadata[topic].partitions)
    if have != partitions:
        raise CopartitionError(
            f"changelog {topic} has {have} partitions but the inputs have {partitions}: it must "
            "match them; delete the changelog (state is rebuilt from the inputs' retention) or "
            "restore the inputs' partition count"
        )


def _wait_for_leaders(admin: Any, topic: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            meta is not None
            and meta.partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        time.sleep(0.2)
