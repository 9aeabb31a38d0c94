"""The aggregator's three streaming queries, wired to the service's ``foreachBatch`` handlers.

  series        metrics -> decode -> valid -> per-series state -> points (InfluxDB + files)
  dead_letters  metrics -> decode -> invalid -> metrics.dlq
  windows       metrics.windows -> decode -> latest count per window -> points; invalid -> dlq

Each has its own checkpoint sub-folder and starts from the earliest offsets on a fresh
checkpoint (the topics are compacted: the latest snapshot of every key is still there).

The series query runs without Spark's no-data micro-batches: with a processing-time timeout
Spark would otherwise run a stateful batch every trigger, even when idle. Timeouts are still
processed in every batch that has data, and every instance of the mesh reports every 10 s, so a
series whose instances all went silent is re-emitted without them within a trigger interval (the
reporting interval by default) of their deadline; only in a mesh where nothing at all reports
does it wait for the next message.

Running "once" (``--once``, the tests): Spark's availableNow trigger and
``processAllAvailable`` wait for a query to report "no new data", which a query with a
processing-time timeout never does while no-data batches are on (it asks for a batch every
trigger). Rather than depend on that setting, :func:`offsets_to_reach` notes each topic's end
offsets before the queries start, and :func:`caught_up` says when a query's last completed
batch got there.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from services.metrics_aggregator.config import AggregatorConfig
from services.metrics_aggregator.decode import classify, invalid, valid
from services.metrics_aggregator.series import series_input, series_updates
from services.metrics_aggregator.service import (
    DEAD_LETTERS,
    SERIES,
    WINDOWS,
    AggregatorService,
)
from services.metrics_aggregator.stateful import SeriesUpdater
from shared.avro.catalogue import Catalogue
from shared.kafka.security import client_security
from shared.topic_names import TopicNames


def kafka_source(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    config: AggregatorConfig,
    kafka_options: dict[str, str] | None = None,
    group_prefix: str = "metrics-aggregator",
) -> DataFrame:
    """``topic`` from its start; ``kafka_options`` log in to a secure cluster, whose ACLs grant
    the source's consumer groups by ``group_prefix``."""
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("groupIdPrefix", group_prefix)
        .options(**(kafka_options or {}))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
        # Compaction leaves gaps in the offsets; they are not lost data.
        .option("failOnDataLoss", "false")
        .load()
    )


NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


def query_name(name: str) -> str:
    return f"metrics-aggregator-{name}"


def query_starters(
    spark: SparkSession, service: AggregatorService, catalogue: Catalogue
) -> dict[str, Callable[[], StreamingQuery]]:
    """How to start each of the three queries, by query name, series first; ``service``
    receives their batches. A query that died of a known Spark fault is started again with
    the same function (:meth:`services.metrics_aggregator.service.AggregatorRun.failure`)."""
    config = service.config
    checkpoints = config.checkpoints(service.settings)

    def source(topic: str) -> DataFrame:
        return kafka_source(spark, service.bootstrap, topic, config,
                            service.kafka_options,
                            TopicNames.of(service.settings).aggregator_group_prefix)  # fmt: skip

    def metrics() -> DataFrame:
        return classify(
            source(config.metrics_topic), catalogue, "metric_snapshot", require_key=True
        )

    updater = SeriesUpdater(config.stale_after_ms, config.remember_retired)

    def start(
        frame: DataFrame, name: str, handler: Callable[[DataFrame, int], None], mode: str = "append"
    ) -> StreamingQuery:
        writer: DataStreamWriter = (
            frame.writeStream.queryName(query_name(name))
            .outputMode(mode)
            .option("checkpointLocation", str(checkpoints / name))
            .foreachBatch(handler)
        )
        return writer.trigger(processingTime=config.trigger).start()

    def start_series() -> StreamingQuery:
        # A query copies the session's configuration when it starts: switch no-data batches
        # off for the series query only.
        series = series_updates(series_input(valid(metrics())), updater)
        previous = spark.conf.get(NO_DATA_BATCHES, None)
        spark.conf.set(NO_DATA_BATCHES, "false")
        try:
            return start(series, SERIES, service.on_series_batch, mode="update")
        finally:
            if previous is None:
                spark.conf.unset(NO_DATA_BATCHES)
            else:
                spark.conf.set(NO_DATA_BATCHES, previous)

    return {
        query_name(SERIES): start_series,
        query_name(DEAD_LETTERS): lambda: start(
            invalid(metrics()), DEAD_LETTERS, service.on_dead_letter_batch
        ),
        query_name(WINDOWS): lambda: start(
            classify(source(config.windows_topic), catalogue, "window_count"),
            WINDOWS,
            service.on_windows_batch,
        ),
    }


#: Offsets per topic and partition (as strings, like Spark's progress reports).
Offsets = dict[str, dict[str, int]]


def offsets_to_reach(service: AggregatorService) -> dict[str, Offsets]:
    """Each query's input end offsets now, by query name: where ``--once`` may stop."""
    config = service.config
    login = client_security(service.settings)
    metrics = end_offsets(service.bootstrap, config.metrics_topic, login=login)
    windows = end_offsets(service.bootstrap, config.windows_topic, login=login)
    return {
        query_name(SERIES): metrics,
        query_name(DEAD_LETTERS): metrics,
        query_name(WINDOWS): windows,
    }


def end_offsets(
    bootstrap: str, topic: str, timeout_s: float = 10.0, login: dict[str, Any] | None = None
) -> Offsets:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metrics-aggregator-ends",
                         **(login or {})})  # fmt: skip
    try:
        found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        partitions = sorted(found.partitions) if found is not None and not found.error else []
        return {
            topic: {
                str(p): consumer.get_watermark_offsets(TopicPartition(topic, p), timeout_s)[1]
                for p in partitions
            }
        }
    finally:
        consumer.close()


def caught_up(query: StreamingQuery, target: Offsets) -> bool:
    """True once the query's last completed batch ended at or after ``target``."""
    if all(offset == 0 for partitions in target.values() for offset in partitions.values()):
        return True  # nothing to read
    progress = query.lastProgress
    if not progress:
        return False
    reached: dict[str, dict[str, Any]] = {}
    for source in progress["sources"]:
        reached.update(_offsets(source["endOffset"]))
    return all(
        int(reached.get(topic, {}).get(partition, -1)) >= offset
        for topic, partitions in target.items()
        for partition, offset in partitions.items()
    )


def _offsets(end: Any) -> dict[str, dict[str, Any]]:
    """A progress event's ``endOffset``: a dict, JSON text, or (pyspark 4.1's progress objects)
    the text of a Python dict."""
    if not isinstance(end, str):
        return dict(end or {})
    try:
        return dict(json.loads(end))
    except ValueError:
        return dict(ast.literal_eval(end))


def stop_queries(queries: list[StreamingQuery], idle_wait_s: float = 10.0) -> None:
    """Stop each query between two batches when possible.

    ``stop()`` interrupts a batch in flight; when that batch is in ``foreachBatch`` (Python, via
    Py4J) Spark 4.0 may die on the interruption's huge message (a StackOverflowError in its
    regex), so each query is given up to ``idle_wait_s`` to finish its current batch first.
    The batch is redone after a restart either way: stopping loses nothing.
    """
    for query in queries:
        deadline = time.monotonic() + idle_wait_s
        while query.isActive and time.monotonic() < deadline:
            if not query.status.get("isTriggerActive", False):
                break
            time.sleep(0.02)
        query.stop()
