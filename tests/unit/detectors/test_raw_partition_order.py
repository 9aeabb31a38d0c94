"""Velocity's alerts do not depend on the order in which ingest writes the raw partitions.

Ingest (Spark) copies each raw partition in order, but the tasks of different raw partitions
interleave in any way. When a key's raw partition number equals its records partition number
(both murmur2, shared/kafka/partitioner.py) every records partition is one raw partition's
records in their order, so a detector's per-partition stream time, and with it which late
buckets are already expired, is the same for every interleaving. With librdkafka's default
CRC32 partitioner on the raw side this stream lost one planted burst when Spark wrote one raw
partition after another (seen in CI as 18 of 19 velocity alerts).
"""

from __future__ import annotations

import itertools
import time

import pytest

from shared.detector import load_detector, run
from shared.kafka.partitioner import partition_for
from tools.loadgen import StreamConfig, generate

PARTITIONS = 4


def _interleavings(by_raw: list[list]) -> dict[str, list]:  # type: ignore[type-arg]
    def alternate(*parts: list) -> list:  # type: ignore[type-arg]
        return [r for group in itertools.zip_longest(*parts) for r in group if r is not None]

    return {
        "one raw partition after another": [r for part in by_raw for r in part],
        "last raw partition first": [r for part in reversed(by_raw) for r in part],
        "two tasks at a time": alternate(*by_raw[:2]) + alternate(*by_raw[2:]),
        "all tasks in step": alternate(*by_raw),
    }


@pytest.fixture(scope="module")
def stream():  # type: ignore[no-untyped-def]
    """The diamond test's stream: 8 000 records over ~133 s of event time, some minutes late."""
    config = StreamConfig(
        start_time_ms=int(time.time() * 1000) - 120_000,
        count=8000,
        seed=8,
        customers=3000,
        event_rate=60.0,
        fraud_share=0.03,
        invalid_share=0.03,
        max_record_bytes=16 * 1024,
    )
    return [r for r in generate(config) if r.meta.is_valid and r.meta.record_type == "transactions"]


def test_every_interleaving_of_raw_partitions_gives_the_planted_velocity_alerts(stream) -> None:  # type: ignore[no-untyped-def]
    detector, _ = load_detector("detectors/velocity")
    expected = {r.meta.record_id for r in stream for a in r.meta.alerts if a.detector == "velocity"}
    assert len(expected) >= 3
    by_raw: list[list] = [[] for _ in range(PARTITIONS)]  # type: ignore[type-arg]
    for record in stream:
        by_raw[partition_for(record.key, PARTITIONS)].append(record)
    for name, order in _interleavings(by_raw).items():
        records = [
            (
                "transactions",
                {
                    "record_id": r.meta.record_id,
                    "customer_id": r.meta.customer_id,
                    "event_time": r.meta.event_time,
                },
            )
            for r in order
        ]
        assert len(records) == len(stream)
        # Expire after every 50 records: the runtime expires per consumed batch, often small.
        result = run(detector, records, partitions=PARTITIONS, batch_size=50, check_alerts=False)
        got = {alert["source_record_id"] for alert in result.alerts}
        assert got == expected, f"{name}: missed {expected - got}, extra {got - expected}"
