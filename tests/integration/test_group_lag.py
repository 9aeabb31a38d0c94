"""Group lag against a real broker: produced minus committed, per partition and in total."""

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from shared.kafka.inspect import group_lag, watermarks

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, count: int) -> dict[int, int]:
    """``count`` records spread over the topic's partitions; how many landed in each."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for n in range(count):
        producer.produce(topic, key=f"key-{n}".encode(), value=b"x")
    assert producer.flush(30) == 0, "some records were never acknowledged"
    per_partition: dict[int, int] = {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "peek"})
    try:
        for partition in consumer.list_topics(topic, timeout=10).topics[topic].partitions:
            low, high = watermarks(consumer, TopicPartition(topic, partition), 10)
            per_partition[partition] = high - low
    finally:
        consumer.close()
    return per_partition


def consume_and_commit(bootstrap: str, group: str, topic: str, count: int) -> dict[int, int]:
    """Read and commit ``count`` records in ``group``; returns the next offset per partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 2,
        }
    )
    next_offsets: dict[int, int] = {}
    deadline = time.monotonic() + 30
    try:
        consumer.subscribe([topic])
        seen = 0
        while seen < count:
            assert time.monotonic() < deadline, f"read only {seen} of {count} records"
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            next_offsets[message.partition()] = message.offset() + 1
            seen += 1
            consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()
    return next_offsets


def test_lag_is_what_was_produced_minus_what_was_committed(
    kafka_bootstrap, unique_name, create_topics
):
    (topic,) = create_topics([unique_name("orders")], partitions=2)
    group = unique_name("detector")
    produced = produce(kafka_bootstrap, topic, 100)
    assert sum(produced.values()) == 100
    committed = consume_and_commit(kafka_bootstrap, group, topic, 60)

    lag = group_lag(kafka_bootstrap, group, [topic])

    assert lag.total == 40
    assert lag.partitions == {
        (topic, p): produced[p] - committed.get(p, 0) for p in sorted(produced)
    }
    assert lag.committed == {(topic, p): committed.get(p) for p in sorted(produced)}


def test_a_group_that_never_committed_lags_by_the_whole_topic(
    kafka_bootstrap, unique_name, create_topics
):
    (topic,) = create_topics([unique_name("orders")], partitions=2)
    produced = produce(kafka_bootstrap, topic, 100)

    lag = group_lag(kafka_bootstrap, unique_name("idle"), [topic, unique_name("missing")])

    assert lag.total == 100
    assert lag.partitions == {(topic, p): n for p, n in produced.items()}
    assert lag.committed == {(topic, 0): None, (topic, 1): None}
