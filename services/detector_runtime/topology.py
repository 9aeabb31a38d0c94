"""Start-up checks of the topics a detector instance needs (its changelog topic:
:func:`shared.kafka.changelog.ensure_changelog`, re-exported here).

A stateful detector keeps state per input partition number and joins its inputs by key, so
partition p of every input must hold the same customers: the inputs must be co-partitioned
(same partition count, same key, same partitioner). The count is checked here against the live
cluster, before the consumer joins the group, and a mismatch is a one-line refusal.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError

from services.detector_runtime.config import Topics
from shared.detector import Detector
from shared.errors import ConfigError
from shared.kafka.changelog import CopartitionError, ensure_changelog

__all__ = ["CopartitionError", "check_topology", "ensure_changelog", "partition_counts"]

log = logging.getLogger(__name__)


def partition_counts(admin: Any, topics: list[str], timeout_s: float = 30.0) -> dict[str, int]:
    """Partition count of each topic; missing topics are a ConfigError naming them."""
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(timeout=10).topics
        refused = [t for t in topics if t in metadata and _unauthorized(metadata[t].error)]
        if refused:
            raise ConfigError(
                f"this instance's principal may not read {', '.join(refused)}: a secure mesh "
                "grants a detector exactly the inputs its manifest declares (docs/security.md)"
            )
        missing = [t for t in topics if t not in metadata or metadata[t].error is not None]
        if not missing:
            return {t: len(metadata[t].partitions) for t in topics}
        if time.monotonic() > deadline:
            raise ConfigError(
                f"input topic(s) {', '.join(missing)} do not exist: run `mesh topics apply` "
                "or pass --input TYPE=TOPIC"
            )
        time.sleep(0.5)


def _unauthorized(error: Any) -> bool:
    return error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


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
