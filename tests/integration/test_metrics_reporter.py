"""MetricsReporter against a real broker: keyed snapshots on a compacted topic, counts that only
grow, and a final snapshot at close that carries the final count."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from polling import wait_for

from shared.avro import AvroDeserializer, Record
from shared.kafka.config import consumer_config, producer_config
from shared.metrics import MetricRegistry, MetricsReporter, instance_id
from shared.settings import Settings

pytestmark = pytest.mark.integration

COMPACTED = {"cleanup.policy": "compact"}


class TopicReader:
    """Everything on partition 0 of a topic, in offset order, read as it arrives."""

    def __init__(self, settings: Settings, topic: str, group: str) -> None:
        self._consumer = Consumer(consumer_config(settings, group))
        self._consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self._decode = AvroDeserializer("metric_snapshot").decode
        self.messages: list[tuple[str, Record]] = []

    def read(self, seconds: float = 0.5) -> list[tuple[str, Record]]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self._consumer.poll(0.1)
            if message is None:
                continue
            assert message.error() is None, message.error()
            key = message.key()
            assert key is not None
            self.messages.append((key.decode(), self._decode(message.value())))
        return self.messages

    def by_key(self) -> dict[str, list[Record]]:
        grouped: dict[str, list[Record]] = defaultdict(list)
        for key, record in self.messages:
            grouped[key].append(record)
        return grouped

    def close(self) -> None:
        self._consumer.close()


def _registry(name: str) -> MetricRegistry:
    return MetricRegistry(
        service="detector.velocity",
        instance_id=instance_id(name),
        tags={"detector": "velocity"},
    )


def test_reporter_publishes_keyed_monotonic_snapshots_and_a_final_one_at_close(
    mesh_settings: Settings,
    create_topics: Callable[..., list[str]],
    unique_name: Callable[[str], str],
) -> None:
    settings = replace(mesh_settings, topic_prefix=unique_name("metrics-test") + ".")
    topic = settings.topic_prefix + "metrics"
    create_topics([topic], config=COMPACTED)
    registry = _registry(unique_name("detector-velocity-r1"))
    errors = registry.counter("errors")
    records_in = registry.meter("records.in", {"partition": "0"})
    processing = registry.timer("processing")
    registry.gauge("state.size", lambda: 42)
    reporter = MetricsReporter.for_settings(registry, settings, interval_s=0.2)
    assert reporter.topic == topic
    reader = TopicReader(settings, topic, unique_name("reader"))
    try:
        reporter.start()
        for round_ in range(15):
            errors.inc()
            records_in.mark(10)
            processing.update_ms(float(round_))
            time.sleep(0.1)
        wait_for(
            lambda: len(reader.read()) >= 4 * 4,
            timeout=30,
            what="at least four rounds of snapshots",
        )
        errors.inc(100)
        assert reporter.close() == 0
        final_errors, final_records = errors.count, records_in.count
        wait_for(
            lambda: any(r["count"] == final_errors for _, r in reader.read()),
            timeout=30,
            what="the final snapshot",
        )
    finally:
        reporter.close()
        reader.close()

    grouped = reader.by_key()
    assert set(grouped) == {entry.key for entry in registry}
    assert f"{registry.instance_id}/records.in{{partition=0}}" in grouped
    for key, records in grouped.items():
        counts = [r["count"] for r in records if r["count"] is not None]
        assert counts == sorted(counts), f"counts went down on {key}: {counts}"
        assert all(r["instance_id"] == registry.instance_id for r in records)
        assert all(r["tags"]["detector"] == "velocity" for r in records)
    assert len(grouped[registry.key(errors)]) >= 4
    assert grouped[registry.key(errors)][-1]["count"] == final_errors == 115
    assert grouped[registry.key(records_in)][-1]["count"] == final_records == 150
    last_timer = grouped[registry.key(processing)][-1]
    assert (last_timer["type"], last_timer["count"], last_timer["max"]) == ("TIMER", 15, 14.0)
    assert grouped[f"{registry.instance_id}/state.size"][-1]["value"] == 42.0


def test_counts_produced_into_the_callers_producer_arrive_with_its_flush(
    mesh_settings: Settings,
    create_topics: Callable[..., list[str]],
    unique_name: Callable[[str], str],
) -> None:
    """The runtime's way: the reporter shares its producer, and the caller's flush (before an
    offset commit) is what delivers the counts."""
    topic = unique_name("metrics")
    create_topics([topic], config=COMPACTED)
    registry = _registry(unique_name("detector-velocity-r2"))
    records_in = registry.meter("records.in")
    registry.counter("errors").inc(3)
    registry.timer("processing").update_ms(2.0)
    producer = Producer(producer_config(mesh_settings))
    reporter = MetricsReporter(registry, producer, topic, interval_s=60)
    reader = TopicReader(mesh_settings, topic, unique_name("reader"))
    try:
        records_in.mark(7)
        assert reporter.produce(types={"COUNTER", "METER"}) == 2
        assert producer.flush(30) == 0
        wait_for(lambda: len(reader.read()) >= 2, timeout=30, what="the counts")
        assert {r["name"]: r["count"] for _, r in reader.messages} == {
            "records.in": 7,
            "errors": 3,
        }
        records_in.mark(1)
        assert reporter.close(timeout_s=30) == 0  # everything, the timer included
        wait_for(lambda: len(reader.read()) >= 5, timeout=30, what="the final snapshots")
    finally:
        reader.close()
    last = {r["name"]: r for _, r in reader.messages[2:]}
    assert set(last) == {"records.in", "errors", "processing"}
    assert last["records.in"]["count"] == 8
    assert last["processing"]["p50"] == 2.0
