"""MetricsReporter without a broker: what it hands the producer, when, and who polls."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from confluent_kafka import KafkaError
from metrics_fakes import FakeProducer
from polling import wait_for

from shared.avro import AvroDeserializer
from shared.kafka.partitioner import partition_for
from shared.metrics import MetricRegistry, MetricsReporter
from shared.metrics import reporter as reporter_module
from shared.settings import Settings

decode = AvroDeserializer("metric_snapshot").decode


def _counts(producer: FakeProducer, key: str) -> list[int]:
    return [decode(m.value)["count"] for m in producer.messages if m.key == key]


def test_produce_hands_every_snapshot_over_without_flushing(registry: MetricRegistry) -> None:
    counter = registry.counter("errors")
    counter.inc(4)
    meter = registry.meter("records.in", {"partition": "0"})
    registry.gauge("state.size", lambda: 3)
    producer = FakeProducer()
    reporter = MetricsReporter(registry, producer, "metrics")
    assert reporter.produce() == 3
    assert producer.flushes == [] and producer.polls == 0
    assert {m.topic for m in producer.messages} == {"metrics"}
    keys = {m.key for m in producer.messages}
    assert keys == {
        registry.key(counter),
        registry.key(meter),
        f"{registry.instance_id}/state.size",
    }
    assert _counts(producer, registry.key(counter)) == [4]


def test_produce_can_select_types(registry: MetricRegistry) -> None:
    registry.counter("errors")
    registry.meter("records.in")
    registry.timer("processing")
    producer = FakeProducer()
    assert MetricsReporter(registry, producer, "metrics").produce({"COUNTER", "METER"}) == 2
    assert {decode(m.value)["type"] for m in producer.messages} == {"COUNTER", "METER"}


def test_a_reporter_without_producer_does_nothing(registry: MetricRegistry) -> None:
    registry.counter("errors")
    reporter = MetricsReporter(registry, None, "metrics")
    reporter.start()
    assert not reporter.enabled
    assert reporter.produce() == 0
    assert reporter.close() == 0


def test_the_thread_produces_every_interval_and_never_polls_the_callers_producer(
    registry: MetricRegistry,
) -> None:
    counter = registry.counter("errors")
    producer = FakeProducer()
    reporter = MetricsReporter(registry, producer, "metrics", interval_s=0.01)
    reporter.start()
    try:
        for _ in range(5):
            counter.inc()
            time.sleep(0.01)
        wait_for(lambda: len(producer.messages) >= 5, timeout=10, what="five rounds")
    finally:
        reporter.close(timeout_s=1)
    assert producer.polls == 0  # its delivery callbacks belong to the caller's thread
    counts = _counts(producer, registry.key(counter))
    assert counts == sorted(counts)
    assert counts[-1] == 5  # the final snapshot from close()
    assert producer.flushes == [1]


def test_an_owned_producer_is_polled_by_the_thread(registry: MetricRegistry) -> None:
    registry.counter("errors")
    producer = FakeProducer()
    reporter = MetricsReporter(registry, producer, "metrics", 0.01, owns_producer=True)
    with reporter:
        wait_for(lambda: producer.polls >= 2, timeout=10, what="polls")
    assert producer.flushes == [10.0]


def test_close_is_idempotent_and_reports_undelivered(registry: MetricRegistry) -> None:
    registry.counter("errors")
    producer = FakeProducer(undelivered=2)
    reporter = MetricsReporter(registry, producer, "metrics")
    assert reporter.close(timeout_s=0.5) == 2
    assert reporter.close() == 0
    assert len(producer.messages) == 1
    assert producer.flushes == [0.5]
    with pytest.raises(RuntimeError, match="closed"):
        reporter.start()


def test_concurrent_producers_enqueue_snapshots_in_the_order_taken(
    registry: MetricRegistry,
) -> None:
    """A snapshot taken earlier must not reach the topic after a later one (compaction would
    keep the stale count)."""
    counter = registry.counter("errors")
    counter.inc()
    entered, release = threading.Event(), threading.Event()

    class SlowProducer(FakeProducer):
        def produce(self, *args: Any, **kwargs: Any) -> None:
            if not entered.is_set():
                entered.set()
                release.wait(10)
            super().produce(*args, **kwargs)

    producer = SlowProducer()
    reporter = MetricsReporter(registry, producer, "metrics")
    first = threading.Thread(target=reporter.produce)
    first.start()
    assert entered.wait(10)
    counter.inc()  # the second snapshot will carry 2
    second = threading.Thread(target=reporter.produce)
    second.start()
    time.sleep(0.2)
    assert producer.messages == []  # the second waits for the first to be enqueued
    release.set()
    first.join(10)
    second.join(10)
    assert _counts(producer, registry.key(counter)) == [1, 2]


def test_a_full_queue_of_the_callers_producer_is_raised(registry: MetricRegistry) -> None:
    registry.counter("errors")
    producer = FakeProducer(full_for=1)
    with pytest.raises(BufferError):
        MetricsReporter(registry, producer, "metrics").produce()
    assert producer.polls == 0


def test_a_full_queue_of_an_owned_producer_is_waited_out_once(registry: MetricRegistry) -> None:
    registry.counter("errors")
    producer = FakeProducer(full_for=1)
    assert MetricsReporter(registry, producer, "metrics", owns_producer=True).produce() == 1
    assert producer.polls == 1
    assert len(producer.messages) == 1


def test_delivery_failures_are_counted(registry: MetricRegistry) -> None:
    registry.counter("errors")
    producer = FakeProducer()
    reporter = MetricsReporter(registry, producer, "metrics")
    reporter.produce()

    class Message:
        def key(self) -> bytes:
            return b"k"

    callback = producer.messages[0].on_delivery
    assert callback is not None
    callback(None, Message())
    callback("broker down", Message())
    assert reporter.delivery_failures == 1


def test_a_partition_without_leader_is_held_until_released(registry: MetricRegistry) -> None:
    """A snapshot that waited out its delivery timeout (no leader) holds its partition: keys that
    go there are not produced again (each would wait out the timeout, and the runtime's commit
    with it) until the partition is released; the others go on."""
    for name in ("a", "b", "c", "d", "e", "f"):
        registry.counter(name).inc()
    producer = FakeProducer(partitions=4)
    reporter = MetricsReporter(registry, producer, "metrics")
    reporter.produce()
    assert len(producer.messages) == 6
    first = producer.messages[0]
    lost = partition_for(first.key.encode(), 4)

    class Message:
        def key(self) -> str:
            return first.key

        def partition(self) -> int:
            return lost

    assert first.on_delivery is not None
    first.on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), Message())
    assert reporter.held == {lost}
    producer.messages.clear()
    reporter.produce()
    sent = {m.key for m in producer.messages}
    assert first.key not in sent
    assert sent and all(partition_for(k.encode(), 4) != lost for k in sent)
    reporter.release({lost})
    producer.messages.clear()
    reporter.produce()
    assert first.key in {m.key for m in producer.messages}


def test_a_reporter_with_its_own_thread_releases_a_partition_once_it_has_a_leader(
    registry: MetricRegistry,
) -> None:
    """The notifier's, ingest's and the aggregator's reporters own their producer and nobody
    releases for them: their thread asks the metadata at each round while a partition is held."""
    registry.counter("a").inc()
    producer = FakeProducer(partitions=4, leaderless={2})
    reporter = MetricsReporter(registry, producer, "metrics", interval_s=0.02, owns_producer=True,
                               serializer=lambda snapshot: b"x")  # fmt: skip
    reporter.held = {1, 2}
    reporter.start()
    try:
        wait_for(lambda: reporter.held == {2}, 5, "partition 1 released")
        time.sleep(0.1)  # several rounds: 2 has no leader, so it stays held
        assert reporter.held == {2}
        producer.leaderless = set()
        wait_for(lambda: not reporter.held, 5, "partition 2 released once it has a leader")
    finally:
        reporter.close(timeout_s=1)


def test_a_refused_snapshot_holds_nothing(registry: MetricRegistry) -> None:
    registry.counter("a").inc()
    producer = FakeProducer()
    reporter = MetricsReporter(registry, producer, "metrics")
    reporter.produce()

    class Message:
        def key(self) -> str:
            return "k"

        def partition(self) -> int:
            return 0

    callback = producer.messages[0].on_delivery
    assert callback is not None
    callback(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE), Message())
    assert reporter.held == set() and reporter.delivery_failures == 1


def test_for_settings_builds_its_own_producer_and_topic(
    registry: MetricRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[dict[str, Any]] = []

    def fake_producer(config: dict[str, Any]) -> FakeProducer:
        built.append(config)
        return FakeProducer()

    monkeypatch.setattr(reporter_module, "Producer", fake_producer)
    settings = replace(
        Settings.from_env({}),
        bootstrap_servers="broker:9092",
        topic_prefix="t1.",
        metrics_interval_s=2.5,
    )
    reporter = MetricsReporter.for_settings(registry, settings)
    assert (reporter.topic, reporter.interval_s) == ("t1.metrics", 2.5)
    assert built[0]["bootstrap.servers"] == "broker:9092"
    assert built[0]["enable.idempotence"] is True
    other = MetricsReporter.for_settings(registry, settings, topic="m", interval_s=0.2)
    assert (other.topic, other.interval_s) == ("m", 0.2)


def test_interval_must_be_positive(registry: MetricRegistry) -> None:
    with pytest.raises(ValueError, match="positive"):
        MetricsReporter(registry, FakeProducer(), "metrics", interval_s=0)


def test_with_commits_only_the_counts_that_moved_are_sent_again(registry: MetricRegistry) -> None:
    records = registry.meter("records.in")
    errors = registry.counter("errors")
    producer = FakeProducer()
    reporter = MetricsReporter(registry, producer, "metrics")
    assert reporter.produce({"COUNTER", "METER"}, changed_only=True) == 2  # first: every count
    records.mark(5)
    assert reporter.produce({"COUNTER", "METER"}, changed_only=True) == 1  # errors did not move
    assert reporter.produce({"COUNTER", "METER"}, changed_only=True) == 0
    errors.inc()
    assert reporter.produce({"COUNTER", "METER"}, changed_only=True) == 1
    assert _counts(producer, registry.key(records)) == [0, 5]
    assert _counts(producer, registry.key(errors)) == [0, 1]
    assert reporter.produce() == 2  # the periodic report still sends everything
