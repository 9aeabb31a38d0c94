"""The ingest job: Kafka raw topics -> validation -> routing and window counts.

Run it with ``python -m services.ingest.job`` (what ``mesh up`` does, local[2]), or submit it
unchanged to a cluster (docs/ingest.md). Two streaming queries share one SparkSession:

  routing  raw -> classify -> records.<type> | records.invalid     (stateless, Kafka sink)
  counts   raw -> classify -> 1 s windows -> metrics.windows        (stateful, update mode)

Both checkpoint under ``$MESH_HOME/ingest/checkpoints``: after a crash they resume from the last
committed micro-batch, so every raw record is routed at least once and window counts stay exact.
SIGTERM stops both queries between batches.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from services.ingest.config import IngestConfig
from services.ingest.metrics import IngestMetricsListener, observe_outcomes
from services.ingest.routing import route
from services.ingest.session import spark_session
from services.ingest.trace_export import start_trace_export
from services.ingest.validation import ERROR, checked_types, classify
from services.ingest.windows import classify_window, count_windows, window_records
from shared.avro.catalogue import Catalogue
from shared.errors import MeshError
from shared.kafka.config import resolve_bootstrap
from shared.metrics import MetricRegistry, MetricsReporter, add_process_gauges, instance_id
from shared.settings import Settings
from shared.tracing import Tracing, setup_tracing
from shared.tracing.stats import add_tracing_gauges

#: Producer settings of both sinks: no duplicates from retries, dead letters up to 4 MiB.
SINK_OPTIONS = {
    "kafka.enable.idempotence": "true",
    "kafka.acks": "all",
    "kafka.linger.ms": "5",
    "kafka.compression.type": "lz4",
    "kafka.max.request.size": str(5 * 1024 * 1024),
}


def raw_source(spark: SparkSession, bootstrap: str, config: IngestConfig) -> DataFrame:
    """Every raw topic, by pattern, with headers (for trace context)."""
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribePattern", config.raw_pattern)
        .option("startingOffsets", config.starting_offsets)
        .option("includeHeaders", "true")
        .option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
        .option("failOnDataLoss", "false")
        .option("kafka.metadata.max.age.ms", "5000")  # see a new raw.<type> topic within seconds
        .load()
    )


def _kafka_sink(frame: DataFrame, bootstrap: str, checkpoint: str, name: str, trigger: str):  # type: ignore[no-untyped-def]
    writer = frame.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in SINK_OPTIONS.items():
        writer = writer.option(key, value)
    return (
        writer.option("checkpointLocation", checkpoint)
        .queryName(name)
        .trigger(processingTime=trigger)
    )


def start_routing(
    spark: SparkSession, settings: Settings, config: IngestConfig, instance_id: str
) -> StreamingQuery:
    """raw -> classify -> records.<type> | records.invalid (stateless)."""
    bootstrap = resolve_bootstrap(settings)
    catalogue = Catalogue.load(settings.schemas_dir)
    types = checked_types(catalogue)
    classified = classify(raw_source(spark, bootstrap, config), types, config.max_record_bytes)
    routed = route(
        observe_outcomes(classified, F.col(ERROR)),
        types,
        catalogue,
        config.records_prefix,
        config.invalid_topic,
        instance_id,
        config.trace_sample_ratio,
    )
    checkpoint = str(config.checkpoints(settings) / "routing")
    return _kafka_sink(routed, bootstrap, checkpoint, "ingest-routing", config.trigger).start()


def start_counting(spark: SparkSession, settings: Settings, config: IngestConfig) -> StreamingQuery:
    """raw -> classify -> 1 s windows -> metrics.windows (stateful, update mode)."""
    bootstrap = resolve_bootstrap(settings)
    catalogue = Catalogue.load(settings.schemas_dir)
    types = checked_types(catalogue)
    placed = classify_window(
        classify(raw_source(spark, bootstrap, config), types, config.max_record_bytes),
        config.allowed_lateness_ms,
    )
    windows = window_records(
        count_windows(placed, config.watermark_delay), catalogue, config.windows_topic
    )
    checkpoint = str(config.checkpoints(settings) / "counts")
    sink = _kafka_sink(windows, bootstrap, checkpoint, "ingest-counts", config.trigger)
    return sink.outputMode("update").start()


def start_queries(
    spark: SparkSession,
    settings: Settings,
    config: IngestConfig,
    instance_id: str,
    tracing: Tracing | None = None,
) -> list[StreamingQuery]:
    """The job's queries, routing first; ``ingest-traces`` too when tracing is on."""
    queries = [
        start_routing(spark, settings, config, instance_id),
        start_counting(spark, settings, config),
    ]
    if tracing is not None and tracing.enabled:
        raw = raw_source(spark, resolve_bootstrap(settings), config)
        types = checked_types(Catalogue.load(settings.schemas_dir))
        checkpoint = str(config.checkpoints(settings) / "traces")
        queries.append(start_trace_export(spark, raw, types, config, checkpoint, tracing))
    return queries


def _report(queries: list[StreamingQuery], stop: threading.Event, every_s: float = 10.0) -> None:
    """A JSON progress line per query every ``every_s`` seconds (records/s, batch duration)."""
    while not stop.wait(every_s):
        for query in queries:
            try:
                progress = query.lastProgress
                if not progress:
                    continue
                line = {
                    "query": query.name,
                    "batch": progress["batchId"],
                    "input_rows": progress["numInputRows"],
                    "input_rows_per_s": round(progress["inputRowsPerSecond"] or 0.0, 1),
                    "processed_rows_per_s": round(progress["processedRowsPerSecond"] or 0.0, 1),
                    "trigger_ms": progress["durationMs"].get("triggerExecution"),
                }
            except Exception as exc:  # a reporting hiccup must never stop the job
                line = {"query": query.name, "report_error": repr(exc)}
            print(json.dumps(line), flush=True)


def main() -> int:
    settings = Settings.from_env()
    try:
        config = IngestConfig.from_env()
        instance = instance_id("ingest")
        # Under spark-submit (which starts the JVM and sets PYSPARK_GATEWAY_PORT) the --master
        # given there wins; run directly, the job uses MESH_INGEST_MASTER (local[2] by default).
        master = None if "PYSPARK_GATEWAY_PORT" in os.environ else config.master
        spark = spark_session("detector-mesh-ingest", settings, master, config.shuffle_partitions)
        registry = MetricRegistry(service="ingest", instance_id=instance)
        add_process_gauges(registry)
        spark.streams.addListener(IngestMetricsListener(registry))
        tracing = setup_tracing("ingest", instance, None, settings)
        if tracing.enabled:  # the ingest-traces query exports through this handle
            add_tracing_gauges(registry, tracing.stats)
        queries = start_queries(spark, settings, config, instance, tracing)
    except MeshError as exc:
        print(f"ingest: error: {exc}", file=sys.stderr)
        return 2
    metrics = MetricsReporter.for_settings(registry, settings)
    metrics.start()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    reporter = threading.Thread(target=_report, args=(queries, stopping), daemon=True)
    reporter.start()
    print(f"ingest: {instance} running queries {[q.name for q in queries]}", flush=True)
    while not stopping.is_set():
        for query in queries:
            if not query.isActive:
                print(f"ingest: query {query.name} stopped: {query.exception()}", file=sys.stderr)
                stopping.set()
        time.sleep(0.5)
    for query in queries:
        query.stop()
    metrics.close()
    tracing.shutdown()
    spark.stop()
    print("ingest: stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
