"""The metrics benchmark (``python -m bench metrics``): what metrics cost a detector, and how
fast the aggregator aggregates.

``metrics_hot_path``: the large_amount detector on one runtime instance drains the detectors'
feed twice per round, with its record-level metrics (the ``processing`` timer per record, the
``delay.end_to_end`` histogram fed once per batch) and with those two swapped for do-nothing
stand-ins; the ratio of the two rates is what they cost (counts and gauges are per batch or per
snapshot either way). The library's own per-call cost (timeit) is in the notes.

``metrics_aggregator``: 1 000 simulated instances x 50 metrics, snapshots on a topic, drained by
the aggregator job from a fresh checkpoint (state, totals, line-protocol files, InfluxDB if one
runs); baseline in the same run: a plain Spark query that reads and decodes the same topic and
does nothing else.
"""

from __future__ import annotations

import time
import timeit
import uuid
from dataclasses import replace
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

from confluent_kafka import Producer

from bench.kafka_fixture import create_topic
from bench.result import Result
from bench.scenarios.detectors import PARTITIONS, feed
from services.detector_runtime.config import RuntimeConfig, default_topics
from services.detector_runtime.main import start
from services.metrics_aggregator.decode import classify, valid
from services.metrics_aggregator.run import AggregatorRun
from shared.avro import AvroSerializer
from shared.avro.catalogue import Catalogue
from shared.detector import load_detector
from shared.endpoints import resolve_bootstrap
from shared.kafka.backpressure import produce_waiting
from shared.kafka.config import producer_config
from shared.metrics import MetricRegistry
from shared.settings import Settings
from shared.spark_session import spark_session
from shared.topic_names import TopicNames

ROUNDS = 2


class _Nothing:
    """Stands in for a timer or histogram: the call without the work."""

    def update(self, value: float) -> None:
        pass

    def update_ns(self, value: int) -> None:
        pass

    def update_many(self, values: object) -> None:
        pass


def _drain(settings: Settings, per_record_metrics: bool) -> float:
    """Records/s of large_amount over the transactions feed, one in-process instance."""

    data = feed(settings)
    detector, manifest = load_detector("detectors.large_amount")
    prefix = f"bench.met.{uuid.uuid4().hex[:8]}."
    topics = default_topics(detector, prefix, {"transactions": data.topics["transactions"]})
    for topic in (topics.alerts, topics.dlq):
        create_topic(settings, "", PARTITIONS, name=topic)
    create_topic(settings, "", 1, name=topics.metrics)
    config = RuntimeConfig(
        detector=detector,
        manifest=manifest,
        topics=topics,
        group_id=TopicNames(prefix).detector_group("large_amount"),
        instance_id="bench-metrics",
        log_interval_s=3600,
    )
    runner = start(settings, config)
    if not per_record_metrics:
        runner.metrics.processing = _Nothing()  # type: ignore[assignment]
        runner.metrics.delay = _Nothing()  # type: ignore[assignment]
    total = data.counts["transactions"]
    runner.run(stop_when=lambda c: c.records >= total)
    seconds = time.perf_counter() - (runner.counters.first_batch_at or time.perf_counter())
    return runner.counters.records / seconds


def _per_call_ns() -> dict[str, float]:
    """ns per call of the hot-path updates (best of 5 timeit runs)."""

    registry = MetricRegistry(service="bench", instance_id="bench@here:1:1")
    counter, meter = registry.counter("c"), registry.meter("m")
    timer, histogram = registry.timer("t"), registry.histogram("h")
    for value in range(5000):  # a full reservoir, as in a running instance
        histogram.update(value)
        timer.update_ns(value * 1000)
    calls = {
        "counter_inc": lambda: counter.inc(),
        "meter_mark": lambda: meter.mark(),
        "timer_update_ns": lambda: timer.update_ns(1234567),
        "histogram_update": lambda: histogram.update(42.0),
    }
    number = 100_000
    return {
        name: min(timeit.repeat(call, number=number, repeat=5)) / number * 1e9
        for name, call in calls.items()
    }


def run_hot_path(settings: Settings) -> Result:
    with_metrics, without = [], []
    for _ in range(ROUNDS):  # alternate, so drift on a shared machine hits both
        without.append(_drain(settings, per_record_metrics=False))
        with_metrics.append(_drain(settings, per_record_metrics=True))
    best_with, best_without = max(with_metrics), max(without)
    calls = _per_call_ns()
    cost = ", ".join(f"{name} {ns:.0f} ns" for name, ns in calls.items())
    count = feed(settings).counts["transactions"]
    return Result(
        "metrics_hot_path",
        count,
        count / best_with,
        notes=(
            f"large_amount with/without per-record metrics: {best_with:,.0f} / "
            f"{best_without:,.0f} records/s = {best_with / best_without:.3f}; {cost}"
        ),
        extra={
            "with_per_record_metrics": best_with,
            "without_per_record_metrics": best_without,
            "ratio_with_to_without": best_with / best_without,
            **{f"{name}_ns": ns for name, ns in calls.items()},
        },
    )


INSTANCES = 1000
METRICS_PER_INSTANCE = 50
SNAPSHOT_ROUNDS = 3
_TYPES = ("COUNTER", "METER", "TIMER", "HISTOGRAM", "GAUGE")


def _snapshot(instance: int, metric: int, round_: int, now_ms: int) -> dict[str, Any]:
    """One plausible snapshot: 10 services x 100 instances, 50 metrics of every type."""
    kind = _TYPES[metric % len(_TYPES)]
    count = (round_ + 1) * 1000 + metric
    stats = dict.fromkeys(("min", "max", "mean", "stddev", "p50", "p75", "p95", "p98", "p99"))
    record: dict[str, Any] = {
        "instance_id": f"bench-{instance}@host:{instance}:1",
        "service": f"detector.bench{instance % 10}",
        "name": f"bench.metric{metric}",
        "type": kind,
        "tags": {"detector": f"bench{instance % 10}"},
        "timestamp": now_ms + round_ * 10_000,
        **stats,
    }
    if kind != "GAUGE":
        record["count"] = count
    if kind in ("METER", "TIMER"):
        record.update(m1_rate=10.0, m5_rate=9.0, m15_rate=8.0, mean_rate=9.5)
    if kind in ("TIMER", "HISTOGRAM"):
        record.update(min=1.0, max=90.0, mean=12.0, stddev=4.0, p50=11.0, p75=14.0, p95=30.0)
        record.update(p98=50.0, p99=70.0, p999=89.0)
    if kind == "GAUGE":
        record["value"] = float(instance)
    return record


def _fill_snapshots(settings: Settings, topic: str) -> int:
    encode = AvroSerializer("metric_snapshot").encode
    producer = Producer(producer_config(settings))
    now_ms = int(time.time() * 1000)
    sent = 0
    for round_ in range(SNAPSHOT_ROUNDS):
        for instance in range(INSTANCES):
            for metric in range(METRICS_PER_INSTANCE):
                record = _snapshot(instance, metric, round_, now_ms)
                key = f"{record['instance_id']}/{record['name']}".encode()
                produce_waiting(producer, topic, encode(record), key)
                sent += 1
    if producer.flush(120):
        raise RuntimeError("snapshots not acknowledged within 120 s")
    return sent


def run_aggregator(settings: Settings) -> Result:
    """Snapshots/s through the aggregator, next to a plain read-and-decode of the same topic."""

    prefix = f"bench.agg.{uuid.uuid4().hex[:8]}."
    names = TopicNames(prefix)
    for name, partitions in ((names.metrics, 4), (names.windows, 4), (names.metrics_dlq, 1)):
        create_topic(settings, "", partitions, name=name)
    topic = names.metrics
    sent = _fill_snapshots(settings, topic)
    home = Path(mkdtemp(prefix="bench-aggregator-"))
    private = replace(settings, topic_prefix=prefix, home=home)
    spark = spark_session("bench-metrics-aggregator", private, "local[2]", 2)
    try:
        # Baseline: the same topic read and decoded by Spark, nothing else.
        started = time.perf_counter()
        raw = spark.read.format("kafka").option("kafka.bootstrap.servers",
            resolve_bootstrap(settings)).option("subscribe", topic).load()  # fmt: skip
        decoded = classify(raw, Catalogue.load(settings.schemas_dir), "metric_snapshot")
        read = valid(decoded).count()
        baseline_s = time.perf_counter() - started

        started = time.perf_counter()
        run = AggregatorRun.start(spark, private, home / "checkpoint", trigger_s=0.5)
        try:
            deadline = time.monotonic() + 600
            while not run.caught_up():
                failure = run.failure()
                if failure or time.monotonic() > deadline:
                    raise RuntimeError(failure or "the aggregator did not catch up in 600 s")
                time.sleep(0.2)
            seconds = time.perf_counter() - started
            snapshots = run.service.counters.snapshot()["snapshots_in"]
        finally:
            run.stop()
    finally:
        spark.stop()
    baseline_rate, rate = read / baseline_s, snapshots / seconds
    return Result(
        "metrics_aggregator",
        snapshots,
        seconds,
        notes=(
            f"{INSTANCES} instances x {METRICS_PER_INSTANCE} metrics x {SNAPSHOT_ROUNDS} rounds "
            f"({sent} sent); plain Spark read+decode {baseline_rate:,.0f} snapshots/s, "
            f"aggregator/read = {rate / baseline_rate:.2f}; files only, no InfluxDB"
        ),
        extra={"read_decode_per_s": baseline_rate, "ratio_to_read_decode": rate / baseline_rate},
    )


def run_all(settings: Settings) -> list[Result]:
    """``python -m bench metrics``: both figures the metrics issue asks for."""
    return [run_hot_path(settings), run_aggregator(settings)]
