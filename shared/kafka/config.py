"""librdkafka configuration dictionaries, rendered from Settings.

Services never build client dictionaries by hand: they call these functions so that every client
has the same safe defaults (idempotent producer, manual commits, cooperative-sticky assignment)
finds the cluster the same way, and logs in the same way where the cluster is secure
(:mod:`shared.kafka.security`).
"""

from __future__ import annotations

from typing import Any

from shared.endpoints import resolve_bootstrap
from shared.kafka.security import client_security
from shared.settings import Settings


def producer_config(settings: Settings, **overrides: Any) -> dict[str, Any]:
    """An idempotent, batching producer: no duplicates from retries, ordering kept per partition.

    Keys are partitioned like Java clients and Spark's Kafka sink do (murmur2, see
    shared/kafka/partitioner.py), not with librdkafka's default CRC32, so a key lands in the same
    partition number on every hop.
    """
    config: dict[str, Any] = {
        "bootstrap.servers": resolve_bootstrap(settings),
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "batch.num.messages": 10000,
        "compression.type": "lz4",
        "queue.buffering.max.messages": 500000,
        "partitioner": "murmur2_random",
        **client_security(settings),
    }
    config.update(overrides)
    return config


def consumer_config(settings: Settings, group_id: str, **overrides: Any) -> dict[str, Any]:
    """A consumer that commits only when told to and rebalances incrementally."""
    config: dict[str, Any] = {
        "bootstrap.servers": resolve_bootstrap(settings),
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
        "enable.partition.eof": False,
        **client_security(settings),
    }
    config.update(overrides)
    return config


def admin_config(settings: Settings, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": resolve_bootstrap(settings),
                              **client_security(settings)}  # fmt: skip
    config.update(overrides)
    return config
