"""The metrics aggregator on the real broker, the session's Spark and a real InfluxDB.

Each test has private topics (``<uid>.metrics`` ...), its own InfluxDB database, MESH_HOME and
checkpoint; the three queries run in the shared SparkSession until the input is drained.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from polling import wait_for

from services.metrics_aggregator import errors
from services.metrics_aggregator.config import metrics_dir, status_path
from services.metrics_aggregator.decode import classify
from services.metrics_aggregator.run import AggregatorRun
from services.metrics_aggregator.series import series_input
from services.metrics_aggregator.service import AggregatorService
from services.metrics_aggregator.windows import window_counts
from shared.avro import AvroSerializer
from shared.avro.catalogue import Catalogue
from shared.json_files import read_json
from shared.kafka.inspect import watermarks
from shared.metrics.keys import snapshot_key
from shared.settings import Settings
from testkit.influx_query import query

pytestmark = pytest.mark.integration

SERVICE = "detector.velocity"
COMMON = {"detector": "velocity"}


def snapshot(instance: str, name: str, kind: str, ts: int, **figures: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "instance_id": instance,
        "service": SERVICE,
        "name": name,
        "type": kind,
        "tags": dict(COMMON),
        "timestamp": ts,
    }
    record.update(figures)
    return record


@pytest.fixture
def mesh(kafka_bootstrap, create_topics, unique_name, influxdb, tmp_path):
    prefix = unique_name("agg") + "."
    compact = {"cleanup.policy": "compact"}
    create_topics([prefix + "metrics"], partitions=2, config=compact)
    create_topics([prefix + "metrics.windows"], partitions=1, config=compact)
    create_topics([prefix + "metrics.dlq"], partitions=1)
    settings = replace(
        Settings.from_env(),
        bootstrap_servers=kafka_bootstrap,
        home=tmp_path / "home",
        topic_prefix=prefix,
        influx_url=influxdb.url,
        influx_db=f"agg_{uuid.uuid4().hex[:8]}",  # created by the aggregator's writer
        metrics_stale_after_s=60.0,
    )
    return settings


def produce(settings: Settings, topic: str, messages: list[tuple[bytes | None, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers})
    errors: list = []

    def delivered(error, _message) -> None:
        if error is not None:
            errors.append(error)

    for key, value in messages:
        producer.produce(settings.topic_prefix + topic, value, key, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert not errors


def run_aggregator(spark, settings: Settings, checkpoint) -> AggregatorService:
    """Run the three queries until each got to where its topic ended (what ``--once`` does)."""
    run = AggregatorRun.start(spark, settings, checkpoint)
    try:
        wait_for(
            lambda: run.caught_up() or run.failure(),
            timeout=90,
            what="the aggregator's queries to catch up",
        )
        assert run.failure() is None, run.failure()
    finally:
        flushed = run.stop(15)
    assert flushed, run.service.influx_writer().stats()
    return run.service


def drain(bootstrap: str, topic: str, timeout: float = 30.0) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"drain-{uuid.uuid4()}"})
    end = watermarks(consumer, TopicPartition(topic, 0), 10)[1]
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    messages: list = []
    deadline = time.monotonic() + timeout
    while len(messages) < end and time.monotonic() < deadline:
        messages += [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
    consumer.close()
    return messages


def influx(settings: Settings, influxql: str) -> list[dict[str, Any]]:
    return query(settings.influx_url, settings.influx_db, influxql, epoch="ms")


def test_instances_snapshots_become_totals_and_a_malformed_one_a_dead_letter(spark, mesh, tmp_path):
    settings = mesh
    now = int(time.time() * 1000)
    a, b = "velocity-0@h1:11:1000", "velocity-1@h2:12:1000"
    dead = "velocity-0@h1:9:500"  # a's predecessor: silent for 10 minutes, stale on arrival
    records = [
        snapshot(a, "records.in", "METER", now - 4000, count=10, m1_rate=1.0, m5_rate=1.0,
                 m15_rate=1.0, mean_rate=1.0),
        snapshot(a, "records.in", "METER", now - 2000, count=25, m1_rate=2.0, m5_rate=2.0,
                 m15_rate=2.0, mean_rate=2.0),
        snapshot(b, "records.in", "METER", now - 1000, count=30, m1_rate=3.0, m5_rate=3.0,
                 m15_rate=3.0, mean_rate=3.0),
        snapshot(dead, "records.in", "METER", now - 600_000, count=100, m1_rate=50.0,
                 m5_rate=50.0, m15_rate=50.0, mean_rate=50.0),
        snapshot(a, "consumer.lag", "GAUGE", now - 2000, value=3.0),
        snapshot(b, "consumer.lag", "GAUGE", now - 1000, value=4.5),
        snapshot(dead, "consumer.lag", "GAUGE", now - 600_000, value=1000.0),
        snapshot(a, "processing", "TIMER", now - 2000, count=30, min=1.0, max=9.0, mean=4.0,
                 stddev=1.0, p50=4.0, p75=5.0, p95=8.0, p98=8.5, p99=8.8, p999=9.0,
                 m1_rate=1.0, m5_rate=1.0, m15_rate=1.0, mean_rate=1.0),
        snapshot(b, "processing", "TIMER", now - 1000, count=10, min=2.0, max=20.0, mean=8.0,
                 stddev=2.0, p50=7.0, p75=9.0, p95=15.0, p98=18.0, p99=19.0, p999=20.0,
                 m1_rate=1.0, m5_rate=1.0, m15_rate=1.0, mean_rate=1.0),
    ]  # fmt: skip
    encode = AvroSerializer("metric_snapshot")
    messages = [(snapshot_key(r, COMMON).encode(), encode.encode(r)) for r in records]
    not_avro = b'{"instance_id": "x", "count": 1}'
    messages.append((b"x@h:1:1/records.in", not_avro))  # (the broker refuses keyless ones)
    produce(settings, "metrics", messages)
    encode_window = AvroSerializer("window_count")
    second = (now // 1000 - 5) * 1000
    window = {"source_topic": "raw.transactions", "window_start": second,
              "window_end": second + 1000, "updated_time": now}  # fmt: skip
    produce(settings, "metrics.windows", [
        (b"k1", encode_window.encode({**window, "status": "VALID", "count": 5})),
        (b"k1", encode_window.encode({**window, "status": "VALID", "count": 9})),
        (b"k2", encode_window.encode({**window, "status": "INVALID", "count": 2})),
    ])  # fmt: skip

    started = time.monotonic()
    service = run_aggregator(spark, settings, tmp_path / "checkpoint")
    print(f"aggregator drained the topics in {time.monotonic() - started:.1f} s")

    # Counts: table semantics over every instance (the stale predecessor's 100 included).
    [total] = influx(settings, """SELECT * FROM "records.in" WHERE "scope" = 'all'""")
    assert total["count"] == 25 + 30 + 100
    assert (total["instances"], total["stale_instances"]) == (2, 1)
    assert total["m1_rate"] == 2.0 + 3.0  # rates: live instances only
    assert total["time"] == now - 1000  # the newest contributing snapshot
    assert total["service"] == SERVICE and total["detector"] == "velocity"
    per_instance = influx(
        settings, """SELECT "count", "instance" FROM "records.in" WHERE "scope" = 'instance'"""
    )
    assert sorted((r["instance"], r["count"]) for r in per_instance) == sorted(
        [(a, 10), (a, 25), (b, 30), (dead, 100)]
    )

    # Gauges: live instances only; a dead instance's own point still exists.
    [lag] = influx(settings, """SELECT * FROM "consumer.lag" WHERE "scope" = 'all'""")
    assert (lag["value"], lag["instances"], lag["stale_instances"]) == (7.5, 2, 1)
    lags = influx(
        settings, """SELECT "value", "instance" FROM "consumer.lag" WHERE "scope" = 'instance'"""
    )
    assert {r["instance"] for r in lags} == {a, b, dead}

    # Timers: min of mins, max of maxes, count-weighted mean, largest percentiles.
    [timer] = influx(settings, """SELECT * FROM "processing" WHERE "scope" = 'all'""")
    assert (timer["count"], timer["min"], timer["max"]) == (40, 1.0, 20.0)
    assert timer["mean"] == pytest.approx((30 * 4.0 + 10 * 8.0) / 40)
    assert (timer["p50"], timer["p99"], timer["p999"]) == (7.0, 19.0, 20.0)

    # Ingest windows: the latest count of each key, at the window start.
    windows = influx(settings, 'SELECT * FROM "ingest.window"')
    assert sorted((w["outcome"], w["count"], w["time"]) for w in windows) == [
        ("invalid", 2, second),
        ("valid", 9, second),
    ]

    # The malformed ones: original bytes and key, and the reason in mesh.error.* headers.
    dlq = drain(settings.bootstrap_servers, settings.topic_prefix + "metrics.dlq")
    [dead_letter] = dlq
    assert dead_letter.value() == not_avro and dead_letter.key() == b"x@h:1:1/records.in"
    headers = {k: v.decode() for k, v in dead_letter.headers()}
    assert headers["mesh.error.stage"] == "decode"
    assert headers["mesh.error.class"] == "shared.avro.errors.NotSingleObjectError"
    assert "not the marker" in headers["mesh.error.message"]
    assert headers["mesh.error.source.topic"] == settings.topic_prefix + "metrics"
    assert int(headers["mesh.error.source.offset"]) >= 0
    assert headers["mesh.error.source.partition"] in {"0", "1"}
    assert headers["mesh.error.instance.id"] == "metrics_aggregator@test"
    assert abs(int(headers["mesh.error.timestamp"]) - now) < 300_000

    # Status file and line-protocol files.
    status = json.loads(status_path(settings).read_text())
    assert status["snapshots_in"] == len(records) and status["dead_letters"] == 1
    assert status["window_counts_in"] == 3 and status["series"] == 3
    assert status["instances"] == {"live": 2, "stale": 1}
    assert status["influx"]["healthy"] and status["influx"]["buffered"] == 0
    assert service.counters.snapshot()["dead_letters"] == 1
    lines = "".join(p.read_text() for p in metrics_dir(settings).glob("*.lp"))
    assert f"records.in,detector=velocity,scope=all,service={SERVICE} count=155i" in lines


def test_state_survives_a_restart_from_the_checkpoint_and_replays_write_the_same_points(
    spark, mesh, tmp_path
):
    settings = mesh
    now = int(time.time() * 1000)
    encode = AvroSerializer("metric_snapshot")

    def send(*records: dict[str, Any]) -> None:
        produce(settings, "metrics", [(snapshot_key(r, COMMON).encode(), encode.encode(r))
                                      for r in records])  # fmt: skip

    send(snapshot("a@h:1:1", "errors", "COUNTER", now - 3000, count=4),
         snapshot("b@h:2:1", "errors", "COUNTER", now - 3000, count=6))  # fmt: skip
    run_aggregator(spark, settings, tmp_path / "checkpoint")
    # a reports again; a restarted b comes back under a new id and counts from 0.
    send(snapshot("a@h:1:1", "errors", "COUNTER", now - 1000, count=5),
         snapshot("b@h:2:9", "errors", "COUNTER", now - 1000, count=1))  # fmt: skip
    run_aggregator(spark, settings, tmp_path / "checkpoint")

    totals = influx(settings, """SELECT "count", "instances" FROM "errors" WHERE "scope" = 'all'""")
    assert [(t["time"], t["count"], t["instances"]) for t in totals] == [
        (now - 3000, 10, 2),
        (now - 1000, 12, 3),  # 5 + 6 + 1: the state came back from the checkpoint
    ]

    # A fresh checkpoint replays the whole topic and writes the very same final total.
    lines_before = "".join(sorted(p.read_text() for p in metrics_dir(settings).glob("*.lp")))
    run_aggregator(spark, settings, tmp_path / "fresh-checkpoint")
    again = influx(settings, """SELECT "count", "instances" FROM "errors" WHERE "scope" = 'all'""")
    assert again == totals
    lines_after = "".join(sorted(p.read_text() for p in metrics_dir(settings).glob("*.lp")))
    assert lines_after.endswith(lines_before.splitlines(keepends=True)[-1])


def test_a_series_whose_instances_went_silent_is_re_emitted_without_them(spark, mesh, tmp_path):
    ttl_s = 5.0
    settings = replace(mesh, metrics_stale_after_s=ttl_s)
    encode = AvroSerializer("metric_snapshot")

    def send(record: dict[str, Any]) -> None:
        produce(
            settings, "metrics", [(snapshot_key(record, COMMON).encode(), encode.encode(record))]
        )

    t1 = int(time.time() * 1000)
    send(snapshot("a@h:1:1", "state.size", "GAUGE", t1, value=5.0))
    run_aggregator(spark, settings, tmp_path / "checkpoint")
    # a says nothing more. Past its deadline, any message makes Spark run a batch, and the
    # timeout of the state.size series fires in it (after a restart: timeouts are state too).
    time.sleep(max(t1 / 1000 + ttl_s + 0.5 - time.time(), 0))
    send(snapshot("b@h:2:1", "errors", "COUNTER", int(time.time() * 1000), count=1))
    run_aggregator(spark, settings, tmp_path / "checkpoint")

    totals = influx(settings, """SELECT * FROM "state.size" WHERE "scope" = 'all'""")
    assert [(t["time"], t["value"], t["instances"], t["stale_instances"]) for t in totals] == [
        (t1, 5.0, 1, 0),
        (t1 + int(ttl_s * 1000), 0.0, 0, 1),  # when a went stale: a new point
    ]


def test_the_service_process_aggregates_until_sigterm_then_stops_cleanly(mesh):
    settings = mesh
    now = int(time.time() * 1000)
    record = snapshot("a@h:1:1", "alerts", "METER", now, count=7, m1_rate=0.5, m5_rate=0.5,
                      m15_rate=0.5, mean_rate=0.5)  # fmt: skip
    key = snapshot_key(record, COMMON).encode()
    produce(settings, "metrics", [(key, AvroSerializer("metric_snapshot").encode(record))])
    env = {
        **os.environ,
        "MESH_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "MESH_HOME": str(settings.home),
        "MESH_TOPIC_PREFIX": settings.topic_prefix,
        "MESH_INFLUX_URL": settings.influx_url,
        "MESH_INFLUX_DB": settings.influx_db,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    log = settings.home / "aggregator.log"
    settings.home.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.metrics_aggregator", "--trigger", "0.5"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            try:  # a Spark start and its first batch: 16 s alone, over 60 s once on a busy CI
                wait_for(
                    lambda: (
                        (read_json(status_path(settings)) or {}).get("snapshots_in") == 1
                        or process.poll() is not None
                    ),
                    timeout=150,
                    what="the aggregator process to take the snapshot",
                )
            except AssertionError as error:
                raise AssertionError(f"{error}; its log: {log.read_text()[-3000:]}") from None
            process.send_signal(signal.SIGTERM)
            assert process.wait(60) == 0, log.read_text()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    status = read_json(status_path(settings))
    assert status is not None and status["state"] == "stopped" and status["last_error"] is None
    [total] = influx(settings, """SELECT "count", "m1_rate" FROM "alerts" WHERE "scope" = 'all'""")
    assert (total["count"], total["m1_rate"], total["time"]) == (7, 0.5, now)


def kafka_rows(spark, messages: list[tuple[bytes | None, bytes | None]], topic: str = "t.metrics"):
    """A static frame shaped like the Kafka source's rows."""
    rows = [(key, value, topic, 0, offset) for offset, (key, value) in enumerate(messages)]
    schema = "key binary, value binary, topic string, partition int, offset long"
    return spark.createDataFrame(rows, schema)


def test_classify_names_the_reason_of_every_malformed_message(spark):
    catalogue = Catalogue.load(Settings.from_env().schemas_dir)
    encode = AvroSerializer("metric_snapshot")
    good = encode.encode(snapshot("a@h:1:1", "alerts", "COUNTER", 1_000, count=3,
                                  tags={"rule": "r1", "detector": "velocity"}))  # fmt: skip
    header = good[:10]
    window = AvroSerializer("window_count").encode(
        {"source_topic": "raw.x", "window_start": 0, "window_end": 1000, "status": "VALID",
         "count": 1, "updated_time": 0}
    )  # fmt: skip
    cases = {
        "good": (b"a@h:1:1/alerts", good),
        "json": (b"k", b'{"count": 1}'),
        "short": (b"k", b"\xc3\x01\x00"),
        "unknown": (b"k", b"\xc3\x01" + bytes(8) + good[10:]),
        "window": (b"k", window),
        "corrupt": (b"k", header + b"\x02"),
        "keyless": (None, good),
        "tombstone": (b"k", None),
    }
    frame = classify(kafka_rows(spark, list(cases.values())), catalogue, "metric_snapshot",
                     require_key=True)  # fmt: skip
    got = {row["offset"]: row for row in frame.collect()}
    names = list(cases)
    reasons = {names[offset]: row["error_class"] for offset, row in got.items()}
    assert reasons == {
        "good": None,
        "json": errors.NOT_SINGLE_OBJECT,
        "short": errors.NOT_SINGLE_OBJECT,
        "unknown": errors.UNKNOWN_FINGERPRINT,
        "window": errors.INCOMPATIBLE_SCHEMA,
        "corrupt": errors.CORRUPT_RECORD,
        "keyless": errors.MISSING_KEY,
    }  # the tombstone is no message: dropped
    messages = {names[offset]: row["error_message"] for offset, row in got.items()}
    assert "window_count v1" in messages["window"]
    assert "metric_snapshot v1" in messages["corrupt"]
    assert "0000000000000000" in messages["unknown"]

    [flat] = series_input(frame.filter("error_class IS NULL")).collect()
    assert (flat["instance_id"], flat["type"], flat["timestamp"], flat["count"]) == (
        "a@h:1:1", "COUNTER", 1_000, 3,
    )  # fmt: skip
    assert json.loads(flat["tags"]) == [
        {"key": "detector", "value": "velocity"},
        {"key": "rule", "value": "r1"},
    ]


def test_window_counts_keep_the_last_written_count_of_each_window(spark):
    catalogue = Catalogue.load(Settings.from_env().schemas_dir)
    encode = AvroSerializer("window_count")

    def window(status: str, count: int) -> bytes:
        return encode.encode({"source_topic": "raw.x", "window_start": 5_000,
                              "window_end": 6_000, "status": status, "count": count,
                              "updated_time": 0})  # fmt: skip

    messages = [(b"k", window("VALID", 7)), (b"k", window("VALID", 3)), (b"j", window("LATE", 1))]
    frame = classify(kafka_rows(spark, messages, "t.metrics.windows"), catalogue, "window_count")
    rows = sorted(tuple(r) for r in window_counts(frame).collect())
    assert rows == [("raw.x", 5_000, "LATE", 1), ("raw.x", 5_000, "VALID", 3)]
