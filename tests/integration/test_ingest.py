"""The ingest job on a real broker and a real Spark session: route and count every raw record.

Each test gets private topics (``<uid>.raw.*``, ``<uid>.records.*`` ...) and checkpoints, runs the
job's two streaming queries in the session's shared SparkSession until the input is drained
(``processAllAvailable``), then reads what landed in Kafka.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kafka_reading import run_ingest
from polling import wait_for

from services.ingest.config import IngestConfig
from services.ingest.job import start_queries
from services.ingest.metrics import IngestMetricsListener
from shared.avro import AvroDeserializer
from shared.kafka.inspect import watermarks
from shared.kafka.partitioner import partition_for
from shared.metrics import MetricRegistry
from tools.loadgen import SendOptions, StreamConfig, generate, produce_to_kafka

pytestmark = pytest.mark.integration


@dataclass
class Topics:
    prefix: str

    def raw(self, kind: str) -> str:
        return f"{self.prefix}.raw.{kind}"

    def records(self, kind: str) -> str:
        return f"{self.prefix}.records.{kind}"

    @property
    def invalid(self) -> str:
        return f"{self.prefix}.records.invalid"

    @property
    def windows(self) -> str:
        return f"{self.prefix}.metrics.windows"

    def config(self, checkpoints: Path, **overrides) -> IngestConfig:
        return IngestConfig(
            raw_pattern=re.escape(self.prefix) + r"\.raw\..*",
            records_prefix=f"{self.prefix}.records",
            invalid_topic=self.invalid,
            windows_topic=self.windows,
            checkpoint_dir=checkpoints,
            **overrides,
        )


@pytest.fixture
def topics(unique_name, create_topics) -> Topics:
    t = Topics(unique_name("ing"))
    big = {"max.message.bytes": str(4 * 1024 * 1024)}
    create_topics([t.raw("transactions"), t.raw("logins")], partitions=8, config=big)
    create_topics([t.raw("parcels")], partitions=1, config=big)  # a type without schema
    create_topics([t.records("transactions"), t.records("logins")], partitions=8)
    create_topics([t.invalid], partitions=4, config=big)
    create_topics([t.windows], partitions=4, config={"cleanup.policy": "compact"})
    return t


def drain(bootstrap: str, topic: str, timeout: float = 60.0):
    """Every message of ``topic`` up to its current end (high watermark of each partition)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "drain", "enable.auto.commit": False}
    )
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {p: watermarks(consumer, TopicPartition(topic, p), 10)[1] for p in partitions}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    messages, positions = [], dict.fromkeys(partitions, 0)
    deadline = time.monotonic() + timeout
    while any(positions[p] < ends[p] for p in partitions):
        assert time.monotonic() < deadline, f"{topic}: read {len(messages)} messages only"
        for message in consumer.consume(1000, timeout=0.5):
            if message.error() is None:
                messages.append(message)
                positions[message.partition()] = message.offset() + 1
    consumer.close()
    return messages


def _observed(registry: MetricRegistry) -> int:
    routing = {"query": "ingest-routing"}
    valid = registry.counter("ingest.records.valid", tags=routing).count
    return valid + registry.counter("ingest.records.invalid", tags=routing).count


def header(message, name: str) -> str | None:
    return next((v.decode() for k, v in (message.headers() or []) if k == name), None)


def test_every_raw_record_lands_in_exactly_one_place_and_is_counted(
    spark, mesh_settings, topics, tmp_path
):
    now = int(time.time() * 1000)
    stream = StreamConfig(start_time_ms=now - 20_000, count=4000, seed=11, invalid_share=0.1,
                          event_rate=400)  # fmt: skip
    report = produce_to_kafka(
        stream, SendOptions(topic_prefix=f"{topics.prefix}.raw", progress=False), mesh_settings
    )
    assert report.failed == 0
    generated = {r.meta.record_id: r for r in generate(stream) if r.meta.is_valid}

    extra = Producer(
        {"bootstrap.servers": mesh_settings.bootstrap_servers, "message.max.bytes": 4_000_000}
    )
    deep = b"[" * 10_000 + b"]" * 10_000
    megabyte = b'{"record_id": "' + b"x" * 1_000_000 + b'"}'
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    extra.produce(topics.raw("transactions"), None, b"k-null")  # null value
    extra.produce(topics.raw("transactions"), deep, b"k-deep")
    extra.produce(topics.raw("transactions"), megabyte, b"k-mb")
    extra.produce(topics.raw("parcels"), b'{"record_id": "p1"}', b"k-parcel")
    first_valid = next(iter(generated.values()))
    extra.produce(topics.raw(first_valid.topic_suffix), first_valid.value, b"k-traced",
                  headers=[("traceparent", parent.encode())])  # fmt: skip
    assert extra.flush(30) == 0
    raw_total = report.delivered + 5

    registry = MetricRegistry(service="ingest", instance_id="ingest@test")
    listener = IngestMetricsListener(registry)
    spark.streams.addListener(listener)
    try:
        run_ingest(spark, mesh_settings, topics.config(tmp_path / "cp"))
        # Progress events reach listeners asynchronously, after the batch.
        wait_for(
            lambda: _observed(registry) == raw_total, timeout=30, what="ingest's outcome counters"
        )
    finally:
        spark.streams.removeListener(listener)

    bootstrap = mesh_settings.bootstrap_servers
    valid = drain(bootstrap, topics.records("transactions")) + drain(
        bootstrap, topics.records("logins")
    )
    invalid = drain(bootstrap, topics.invalid)

    # Exactly one place per raw record (deduplicated by source coordinates).
    valid_sources = {header(m, "mesh.source") for m in valid}
    decode_invalid = AvroDeserializer("invalid_record")
    dead = [decode_invalid.decode(m.value()) for m in invalid]
    invalid_sources = {
        f"{d['source_topic']}:{d['source_partition']}:{d['source_offset']}" for d in dead
    }
    assert None not in valid_sources
    assert not valid_sources & invalid_sources
    assert len(valid_sources) + len(invalid_sources) == raw_total

    # The valid ones are exactly the generator's valid records, re-sent one included.
    decoders = {
        "transactions": AvroDeserializer("transaction"),
        "logins": AvroDeserializer("login"),
    }
    routed_ids = Counter()
    for message in valid:
        kind = message.topic().rsplit(".", 1)[1]
        record = decoders[kind].decode(message.value())
        assert message.key() == record["customer_id"].encode()
        routed_ids[record["record_id"]] += 1
    assert set(routed_ids) == set(generated)
    assert routed_ids[first_valid.meta.record_id] == 2

    # Every invalid record keeps its original bytes and says why.
    codes = Counter(d["error_code"] for d in dead)
    assert codes["UNKNOWN_TYPE"] == 1 and codes["EMPTY"] >= 2 and codes["OVERSIZED"] >= 1
    assert any(d["original"] == deep and d["error_code"] == "NOT_JSON" for d in dead)
    assert any(d["original"] == megabyte and d["error_code"] == "OVERSIZED" for d in dead)
    for message in invalid:
        assert header(message, "mesh.error.stage") == "ingest"
        assert header(message, "mesh.error.class")
    assert sum(codes.values()) == report.invalid + 4

    # The metrics of the instance (its query listener) agree with what landed in Kafka.
    routing = {"query": "ingest-routing"}
    assert registry.counter("ingest.records.valid", tags=routing).count == len(valid)
    assert registry.counter("ingest.records.invalid", tags=routing).count == len(invalid)
    assert registry.meter("ingest.rows.in", tags=routing).count == raw_total

    # Trace context: everything carries one; a record sent with one continues its trace.
    parents = [header(m, "traceparent") or "" for m in valid + invalid]
    assert all(re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]", p) for p in parents)
    continued = [m for m in valid if header(m, "traceparent").split("-")[1] == parent.split("-")[1]]
    assert len(continued) == 1 and header(continued[0], "traceparent") != parent
    assert header(continued[0], "traceparent").endswith("-01")  # the customer's decision holds

    # A key keeps its partition number from raw to records topic: the generator's producer and
    # Spark's sink both partition with murmur2 (the re-sent record's raw key was another one).
    for message in valid:
        assert message.partition() == partition_for(message.key(), 8)

    def raw_partition(message) -> int:  # type: ignore[no-untyped-def]
        return int(header(message, "mesh.source").rsplit(":", 2)[1])

    moved = [m for m in valid if m is not continued[0] and raw_partition(m) != m.partition()]
    assert not moved, f"{len(moved)} records changed partition number, e.g. {moved[0].key()}"
    # New traces are sampled as OpenTelemetry's TraceIdRatioBased(0.01) decides for their id.
    bound = round(0.01 * 2**64)
    new = [p for p in parents if p.split("-")[1] != parent.split("-")[1]]
    assert all(p.endswith("-01") == (int(p[19:35], 16) < bound) for p in new)
    sampled = sum(p.endswith("-01") for p in new)
    assert 0 < sampled < len(new) // 10, f"{sampled} of {len(new)} sampled at 1 %"

    # Window counts: every raw record counted once, in the latest value of each key.
    latest = {}
    decode_window = AvroDeserializer("window_count")
    for message in drain(bootstrap, topics.windows):
        latest[message.key()] = decode_window.decode(message.value())
    by_status = Counter()
    for window in latest.values():
        key = f"{window['source_topic']}/{window['window_start']}/{window['status'].lower()}"
        assert key.encode() in latest
        by_status[window["status"]] += window["count"]
    assert sum(by_status.values()) == raw_total
    assert by_status["INVALID"] == len(invalid_sources)
    assert by_status["VALID"] + by_status["LATE"] == len(valid_sources)


def test_a_99_to_1_mix_over_8_partitions_gives_exact_counts_per_window(
    spark, mesh_settings, topics, tmp_path
):
    """Skewed statuses do not skew the work: partial counts before the shuffle, exact totals."""
    second = (int(time.time()) - 10) * 1000  # 1 s windows well within the lateness bound
    producer = Producer({"bootstrap.servers": mesh_settings.bootstrap_servers, "linger.ms": 20})
    expected = Counter()
    for i in range(10_000):
        window = second - (i % 5) * 1000
        record = {
            "record_id": f"r{i}", "customer_id": f"c{i % 997}", "event_time": window + i % 1000,
            "amount": 10.0 + i % 50, "currency": "EUR", "merchant_id": f"m{i % 31}",
            "country": "DE",
        }  # fmt: skip
        if i % 100 == 99:
            record["currency"] = "XXX-not-a-currency"
        status = "INVALID" if i % 100 == 99 else "VALID"
        # Invalid records are counted at arrival; valid ones in their event-time window.
        expected[(window if status == "VALID" else None, status)] += 1
        producer.produce(topics.raw("transactions"), json.dumps(record).encode(),
                         record["customer_id"].encode(), partition=i % 8)  # fmt: skip
    assert producer.flush(30) == 0

    queries = start_queries(spark, mesh_settings, topics.config(tmp_path / "cp"), "ingest@test")
    try:
        for query in queries:
            query.processAllAvailable()
        plan = queries[1]._jsq.explainInternal(False)  # what query.explain() prints
        print(
            "PROGRESS",
            [(p["batchId"], p["numInputRows"], p["sink"]) for p in queries[1].recentProgress],
        )
    finally:
        for query in queries:
            query.stop()

    # Physical plan: a partial count runs before the exchange (shuffle), the final one after.
    assert "partial_count" in plan
    assert plan.index("partial_count") > plan.index("Exchange")  # printed top-down: later = lower

    decode = AvroDeserializer("window_count")
    latest = {
        m.key(): decode.decode(m.value())
        for m in drain(mesh_settings.bootstrap_servers, topics.windows)
    }
    got = Counter()
    for window in latest.values():
        assert window["source_topic"] == topics.raw("transactions")
        assert window["window_end"] - window["window_start"] == 1000
        got[
            (window["window_start"] if window["status"] == "VALID" else None, window["status"])
        ] += window["count"]
    assert {k: v for k, v in got.items() if k[1] == "VALID"} == {
        k: v for k, v in expected.items() if k[1] == "VALID"
    }
    assert got[(None, "INVALID")] == expected[(None, "INVALID")] == 100
    assert got[(None, "LATE")] == 0
