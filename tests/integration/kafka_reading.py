"""Helpers the ingest tests share: records in a topic now, and the job run in-process."""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition

from services.ingest.config import IngestConfig
from services.ingest.job import start_queries


def records_in(bootstrap: str, topics: list[str]) -> int:
    """Records in ``topics`` right now (sum of the partitions' high watermarks)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "peek"})
    try:
        total = 0
        for topic in topics:
            for partition in consumer.list_topics(topic, timeout=10).topics[topic].partitions:
                total += consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=10
                )[1]
        return total
    finally:
        consumer.close()


def run_ingest(  # type: ignore[no-untyped-def]
    spark, settings, config: IngestConfig, instance_id: str = "ingest@test", tracing=None
) -> list:
    """Run the ingest queries in ``spark`` until the input is drained; returns them, stopped."""
    queries = start_queries(spark, settings, config, instance_id, tracing)
    try:
        for query in queries:
            query.processAllAvailable()
    finally:
        for query in queries:
            query.stop()
    return queries
