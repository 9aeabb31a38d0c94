"""The ingest job's throughput and latency on local[2], next to the raw pipe of the same run.

``ingest`` drains a backlog of generated raw records (1 % invalid) through validation and routing
(the routing query alone, then the window-count query alone), timed from the first batch that saw
data to the last. ``ingest_real_time`` drains the same kind of backlog with routing in real-time
mode, sized as ``mesh up`` sizes it (a task slot per raw partition + 2). ``ingest_latency``
offers a fixed rate and measures raw -> records.<type>: from the raw record's Kafka timestamp to
the routed copy's.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

from confluent_kafka import Consumer

from bench.kafka_fixture import create_topic
from bench.result import Result, percentile
from services.ingest.config import IngestConfig
from services.ingest.job import start_counting, start_queries, start_routing
from services.ingest.trigger_mode import master_for, plan
from shared.lineage import source_timestamp_ms
from shared.settings import Settings
from shared.spark_session import spark_session
from shared.topic_names import TopicNames
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka

COUNT = 500_000
#: Records per micro-batch of the throughput run.
BATCH = 100_000
#: Records routed before the paced latency run starts.
WARM_UP = 20_000


def _topics(settings: Settings) -> str:
    prefix = f"bench.ingest.{uuid.uuid4().hex[:8]}"
    names = _names(prefix)
    for kind in ("transactions", "logins"):
        create_topic(settings, "", 8, name=names.raw(kind))
        create_topic(settings, "", 8, name=names.records(kind))
    create_topic(settings, "", 4, name=names.invalid)
    create_topic(settings, "", 4, name=names.windows)
    return prefix


def _names(prefix: str) -> TopicNames:
    """The topics of one run, under ``<prefix>.``."""
    return TopicNames(f"{prefix}.")


def _config(prefix: str, checkpoints: Path):  # type: ignore[no-untyped-def]

    return IngestConfig(
        raw_pattern=_names(prefix).raw_pattern,
        records_prefix=_names(prefix).records_family,
        invalid_topic=_names(prefix).invalid,
        windows_topic=_names(prefix).windows,
        checkpoint_dir=checkpoints,
        max_offsets_per_trigger=BATCH,
        max_record_bytes=MAX_RECORD_BYTES,
        # Counting's capacity, as in the figures before issue 20: batches back to back (the
        # job's default waits 5 s between them, which a backlog drain would time instead).
        counting_trigger="0 seconds",
    )


#: Oversized records are made just over this limit; the generator's default (512 KiB) would make
#: the 1 % invalid share carry most of the bytes and turn the scenario into a bandwidth test.
MAX_RECORD_BYTES = 16 * 1024


def _stream(count: int, now_ms: int) -> StreamConfig:
    return StreamConfig(start_time_ms=now_ms - 60_000, count=count, seed=5, invalid_share=0.01,
                        event_rate=2000, customers=100_000,
                        max_record_bytes=MAX_RECORD_BYTES)  # fmt: skip


@contextlib.contextmanager
def _session(settings: Settings, home: Path, master: str = "local[2]"):  # type: ignore[no-untyped-def]
    """A session with its scratch folder under ``home``, stopped on the way out: a session left
    running would hand later scenarios (``getOrCreate``) a deleted scratch folder."""

    spark = spark_session("bench-ingest", replace(settings, home=home), master, 2)
    try:
        yield spark
    finally:
        spark.stop()


def _steady_rate(query, count: int) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    """Rows and seconds of the micro-batches after the first, once ``count`` rows are processed.

    The first batch with data carries the query's warm-up (code generation, Kafka consumers,
    JIT): it is left out, as the paced scenarios leave out their first seconds.
    """
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        if sum(p["numInputRows"] for p in batches) >= count:
            steady = batches[1:]
            rows = sum(p["numInputRows"] for p in steady)
            seconds = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
            return rows, seconds
        time.sleep(0.5)
    raise RuntimeError(f"{query.name} did not process {count} rows in 900 s")


def run_throughput(settings: Settings, count: int = COUNT) -> Result:
    """Records/s of validation + routing, then of window counting, each alone, from a backlog."""

    prefix = _topics(settings)
    report = produce_to_kafka(
        _stream(count, int(time.time() * 1000)),
        SendOptions(topic_prefix=_names(prefix).raw_family, progress=False),
        settings,
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp,
        _session(settings, Path(tmp)) as spark,
    ):
        config = _config(prefix, Path(tmp) / "cp")
        routing = start_routing(spark, settings, config, "bench")
        try:
            rows, seconds = _steady_rate(routing, report.delivered)
        finally:
            routing.stop()
        counting = start_counting(spark, settings, config)
        try:
            count_rows, count_seconds = _steady_rate(counting, report.delivered)
        finally:
            counting.stop()
    notes = (
        f"validate+route, batches of {BATCH:,} after the first; "
        f"window counting alone {count_rows / count_seconds:,.0f}/s"
    )
    return Result("ingest", rows, seconds, notes=notes)


#: Raw partitions of the scenario's topics (two types x 8), hence real-time mode's task slots.
RAW_PARTITIONS = 16
#: The leading share of routed records left out of the real-time rate: the first batch's planning,
#: code generation and the 16 consumers' start.
WARM_SHARE = 0.05


def run_real_time_throughput(settings: Settings, count: int = COUNT) -> Result:
    """Records/s of validation + routing in real-time mode, from a backlog, on the master
    ``mesh up`` would start for these raw partitions.

    A real-time batch has no per-batch progress to time, so the rate comes from the routed
    records' own Kafka timestamps: the records after the first WARM_SHARE over the time from the
    first of them to the last. That includes the checkpoint hand-overs (one per
    ``checkpoint_interval``), as a user's steady run would.
    """

    prefix = _topics(settings)
    report = produce_to_kafka(
        _stream(count, int(time.time() * 1000)),
        SendOptions(topic_prefix=_names(prefix).raw_family, progress=False),
        settings,
    )
    master = master_for("auto", RAW_PARTITIONS)
    names = _names(prefix)
    outputs = [names.records("transactions"), names.records("logins"), names.invalid]
    with (
        tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp,
        _session(settings, Path(tmp), master) as spark,
    ):
        trigger = plan("real-time", RAW_PARTITIONS, spark.sparkContext.defaultParallelism)
        if not trigger.real_time:
            raise RuntimeError(trigger.line())
        config = _config(prefix, Path(tmp) / "cp")
        routing = start_routing(spark, settings, config, "bench", trigger)
        try:
            stamps = _routed_timestamps(settings, outputs, report.delivered)
        finally:
            routing.stop()
    stamps.sort()
    steady = stamps[int(len(stamps) * WARM_SHARE) :]
    seconds = (steady[-1] - steady[0]) / 1000
    notes = (
        f"real-time on {master}, checkpoint every {config.checkpoint_interval}; "
        f"routed records' timestamps, first {WARM_SHARE:.0%} left out"
    )
    return Result("ingest_real_time", len(steady), seconds, notes=notes)


def _routed_timestamps(settings: Settings, topics: list[str], count: int) -> list[int]:
    """The Kafka timestamps (ms) of the first ``count`` records routed to ``topics``."""

    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers,
                         "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    stamps: list[int] = []
    deadline = time.monotonic() + 900
    try:
        consumer.subscribe(topics)
        while len(stamps) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(stamps)} of {count} records routed in 900 s")
            for message in consumer.consume(5000, timeout=0.5):
                if message.error() is None:
                    stamps.append(message.timestamp()[1])
    finally:
        consumer.close()
    return stamps


def run_latency(settings: Settings, rate: int = 5000, duration: float = 20.0) -> Result:
    """raw -> records.<type> latency at a fixed offered rate, both queries running.

    A warm-up backlog of WARM_UP records is routed first (the queries' first batches compile
    code and open consumers); then the paced feed starts, and its first 2 s are left out.
    """

    prefix = _topics(settings)
    with (
        tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp,
        _session(settings, Path(tmp)) as spark,
    ):
        queries = start_queries(spark, settings, _config(prefix, Path(tmp) / "cp"), "bench")
        consumer = Consumer(
            {"bootstrap.servers": settings.bootstrap_servers, "group.id": f"bench-{prefix}",
             "auto.offset.reset": "earliest"}
        )  # fmt: skip
        consumer.subscribe(
            [_names(prefix).records("transactions"), _names(prefix).records("logins")]
        )
        warm = produce_to_kafka(
            _stream(WARM_UP, int(time.time() * 1000)),
            SendOptions(topic_prefix=_names(prefix).raw_family, progress=False),
            settings,
        )
        warmed, deadline = 0, time.monotonic() + 300
        while warmed < warm.valid and time.monotonic() < deadline:
            warmed += sum(1 for m in consumer.consume(2000, timeout=0.5) if m.error() is None)
        started_ms = int(time.time() * 1000)
        failures: list[BaseException] = []

        def feed() -> None:
            try:
                produce_to_kafka(
                    _stream(int(rate * duration), started_ms + 60_000),
                    SendOptions(topic_prefix=_names(prefix).raw_family, rate=rate, progress=False),
                    settings,
                )
            except BaseException as exc:  # surfaced after the join, not lost in the thread
                failures.append(exc)

        feeder = threading.Thread(target=feed)
        feeder.start()
        latencies: list[float] = []
        routed = 0
        deadline = time.monotonic() + duration + 60
        while (
            feeder.is_alive() or routed < rate * duration * 0.95
        ) and time.monotonic() < deadline:
            for message in consumer.consume(2000, timeout=0.5):
                if message.error() is None:
                    routed += 1
                    source_ms = source_timestamp_ms(message.headers())
                    if source_ms and source_ms >= started_ms + 2000:
                        latencies.append(message.timestamp()[1] - source_ms)
        feeder.join()
        consumer.close()
        for query in queries:
            query.stop()
        if failures:
            raise failures[0]
    return Result(
        "ingest_latency",
        routed,
        duration,
        latency_p50_ms=percentile(latencies, 50),
        latency_p99_ms=percentile(latencies, 99),
        notes=f"paced at {rate}/s; raw Kafka timestamp -> routed record's timestamp",
        paced=True,
    )
