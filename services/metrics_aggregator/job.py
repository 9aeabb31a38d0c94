"""The aggregator's two streaming queries, wired to the service's ``foreachBatch`` handlers.

  metrics   metrics -> decode -> one collect of flat columns -> valid: per-series state in the
            driver (:mod:`series_table`) -> points (InfluxDB + files); invalid -> metrics.dlq
  windows   metrics.windows -> decode -> latest count per window -> points; invalid -> dlq

Each has its own checkpoint sub-folder and starts from the earliest offsets on a fresh
checkpoint (the topics are compacted: the latest snapshot of every key is still there).

Both are stateless for Spark, so Spark runs a batch only when a topic got messages: an idle
mesh's aggregator does no batch at all, and a near-idle one one small batch per reporting
interval (one Kafka read, no shuffle, no state store, no Python worker: issue 20). The series'
timeouts are processed in every batch of the metrics query, and every instance of the mesh
reports every 10 s, so a series whose instances all went silent is re-emitted without them
within a trigger interval (the reporting interval by default) of their deadline; only in a mesh
where nothing at all reports does it wait for the next message (as before).

The series state is versioned by batch id next to the checkpoint (:mod:`series_store`), and
each batch's clock is the ``batchTimestampMs`` Spark wrote to its offset log before running it
(:func:`checkpoint.batch_timestamp_ms`): a batch run again after a crash sees the same clock
and the state of the batch before, so it writes the same points (as Spark's state store did).
(Checkpoints of the earlier three-query aggregator, ``series`` and ``dead_letters``, are not
read: the first start of this one rebuilds every series from the compacted topic.)

Running "once" (``--once``, the tests): :func:`offsets_to_reach` notes each topic's end
offsets before the queries start, and :func:`caught_up` says when a query's last completed
batch got there.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from services.metrics_aggregator.config import AggregatorConfig
from services.metrics_aggregator.decode import classify
from services.metrics_aggregator.service import METRICS, WINDOWS, AggregatorService
from shared.avro.catalogue import Catalogue
from shared.kafka.inspect import watermarks
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


def query_name(name: str) -> str:
    return f"metrics-aggregator-{name}"


def query_starters(
    spark: SparkSession, service: AggregatorService, catalogue: Catalogue
) -> dict[str, Callable[[], StreamingQuery]]:
    """How to start each of the two queries, by query name, metrics first; ``service``
    receives their batches. A query that died of a known Spark fault is started again with
    the same function (:meth:`services.metrics_aggregator.run.AggregatorRun.failure`)."""
    config = service.config

    def source(topic: str) -> DataFrame:
        return kafka_source(spark, service.bootstrap, topic, config,
                            service.kafka_options,
                            TopicNames.of(service.settings).aggregator_group_prefix)  # fmt: skip

    def start(
        frame: DataFrame, name: str, handler: Callable[[DataFrame, int], None]
    ) -> StreamingQuery:
        writer: DataStreamWriter = (
            frame.writeStream.queryName(query_name(name))
            .outputMode("append")
            .option("checkpointLocation", str(service.checkpoint(name)))
            .foreachBatch(handler)
        )
        return writer.trigger(processingTime=config.trigger).start()

    return {
        query_name(METRICS): lambda: start(
            classify(source(config.metrics_topic), catalogue, "metric_snapshot", require_key=True),
            METRICS,
            service.on_metrics_batch,
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
    return {query_name(METRICS): metrics, query_name(WINDOWS): windows}


def end_offsets(
    bootstrap: str, topic: str, timeout_s: float = 10.0, login: dict[str, Any] | None = None
) -> Offsets:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metrics-aggregator-ends",
                         **(login or {})})  # fmt: skip
    try:
        found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        partitions = sorted(found.partitions) if found is not None and not found.error else []
        return {
            topic: {
                str(p): watermarks(consumer, TopicPartition(topic, p), timeout_s)[1]
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
