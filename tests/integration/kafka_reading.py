"""Helpers the ingest tests share: records in a topic now, and the job run in-process."""

from __future__ import annotations

import time
from collections import Counter

from confluent_kafka import Consumer, TopicPartition

from services.ingest.config import IngestConfig
from services.ingest.job import start_queries
from shared.avro import AvroDeserializer
from shared.kafka.inspect import watermarks


def records_in(bootstrap: str, topics: list[str], settle_s: float = 60.0) -> int:
    """Records in ``topics`` right now (sum of the partitions' high watermarks); each partition
    is asked again for up to ``settle_s`` while its leadership settles (a topic just created or
    grown, a broker just restarted: shared.kafka.inspect.watermarks)."""
    return sum(partition_ends(bootstrap, topics, settle_s).values())


def partition_ends(
    bootstrap: str, topics: list[str], settle_s: float = 60.0
) -> dict[tuple[str, int], int]:
    """Each partition's end (high watermark) of ``topics``, as ``records_in`` asks for it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "peek"})
    try:
        ends = {}
        for topic in topics:
            for partition in consumer.list_topics(topic, timeout=10).topics[topic].partitions:
                ends[(topic, partition)] = watermarks(
                    consumer, TopicPartition(topic, partition), settle_s
                )[1]
        return ends
    finally:
        consumer.close()


def read_all(bootstrap: str, topics: list[str], expected: int, timeout: float = 120.0):  # type: ignore[no-untyped-def]
    """Messages of ``topics`` from the start, until ``expected`` are read or ``timeout`` passes."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"read-{time.time()}",
         "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )  # fmt: skip
    consumer.subscribe(topics)
    messages: list = []
    deadline = time.monotonic() + timeout
    while len(messages) < expected and time.monotonic() < deadline:
        messages.extend(m for m in consumer.consume(2000, timeout=0.5) if m.error() is None)
    consumer.close()
    return messages


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


def routed_sources(messages: list, invalid: str) -> Counter:
    """How often each raw record (topic:partition:offset) was routed; each must have landed in
    one place only, a records topic or the dead letters, however often it was replayed."""
    decode_invalid = AvroDeserializer("invalid_record")
    sources: Counter = Counter()
    places: dict[str, set[str]] = {}
    for message in messages:
        if message.topic() == invalid:
            dead = decode_invalid.decode(message.value())
            coordinates = (
                f"{dead['source_topic']}:{dead['source_partition']}:{dead['source_offset']}"
            )
        else:
            coordinates = next(v.decode() for k, v in message.headers() if k == "mesh.source")
        sources[coordinates] += 1
        places.setdefault(coordinates, set()).add(message.topic())
    split = {c: p for c, p in places.items() if len(p) > 1}
    assert not split, f"{len(split)} raw records landed in two places, e.g. {split.popitem()}"
    return sources


def stable(count, quiet_s: float = 4.0):
    """A condition that holds once ``count()`` has not changed for ``quiet_s`` seconds."""
    state = {"value": None, "since": time.monotonic()}

    def check() -> bool:
        value = count()
        if value != state["value"]:
            state["value"], state["since"] = value, time.monotonic()
        return time.monotonic() - state["since"] >= quiet_s

    return check
