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

#: How long a client waits on one broker's answer before it gives up on that connection and asks
#: the cluster again (librdkafka's defaults: 60 s for any request, 30 s for a produce's acks).
#: A broker that hangs (a stopped process, a stalled disk) keeps its sockets open, so nothing
#: fails fast: the records on the partitions it led waited out these deadlines though the
#: cluster fenced it and moved its leaders in ~5 s, and an idempotent producer's later batches to
#: the new leader were refused as out of sequence until the early ones timed out (issue 48,
#: chaos case 17). Ten seconds is long past any answer of a healthy broker.
FAIL_OVER = {"socket.timeout.ms": 10_000}
PRODUCER_FAIL_OVER = {**FAIL_OVER, "request.timeout.ms": 10_000}


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
        **PRODUCER_FAIL_OVER,
        **client_security(settings),
    }
    config.update(overrides)
    return config


#: How far a consumer fetches ahead of its application: about 2 000 records a partition and 1 MiB,
#: refilled after 5 ms instead of librdkafka's 1 000 ms backoff. librdkafka's defaults (100 000
#: records a partition, 64 MiB, 1 s backoff) held 120-220 MB of fetched batches for a Python
#: consumer that takes a few thousand at a time, a million customers' state beside them made
#: a stateful detector ~450 MB, and the long backoff left the queue empty while it waited: a bare
#: read of 2 000 000 transactions took 8.0 s and peaked at 156 MB with them, 1.9 s and 57 MB with
#: these (docs/benchmarks.md, "Fetching ahead").
FETCH_AHEAD = {
    "queued.min.messages": 2000,
    "queued.max.messages.kbytes": 1024,
    "fetch.queue.backoff.ms": 5,
}


def consumer_config(settings: Settings, group_id: str, **overrides: Any) -> dict[str, Any]:
    """A consumer that commits only when told to, rebalances incrementally, and fetches ahead
    only as much as it will soon take (:data:`FETCH_AHEAD`)."""
    config: dict[str, Any] = {
        "bootstrap.servers": resolve_bootstrap(settings),
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
        "enable.partition.eof": False,
        **FETCH_AHEAD,
        **FAIL_OVER,
        **client_security(settings),
    }
    config.update(overrides)
    return config


def admin_config(settings: Settings, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": resolve_bootstrap(settings),
                              **client_security(settings)}  # fmt: skip
    config.update(overrides)
    return config
