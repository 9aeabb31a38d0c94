"""Ingest's spans: a third, small streaming query that exports one span per sampled record.

Why a query of its own: the routing query writes to Kafka from the executors, where no tracer
lives, and turning it into a ``foreachBatch`` would give up the Kafka sink's delivery. The ids
are deterministic (:mod:`services.ingest.tracing`: trace id and ingest's span id from the
record's source coordinates or its incoming context), so this query recomputes exactly the ids
the routing query put in the routed record's ``traceparent``, keeps only the sampled records
*before* validating anything (at 1 % it validates 1 % of the raw records again), and hands their
spans to the driver's exporter. With tracing off (no OTLP endpoint) the query is not started.

The span: CONSUMER ``"<raw topic> process"``, from the moment the record reached Kafka to the
moment its micro-batch was handled, with the messaging attributes and the validation outcome
(``mesh.ingest.outcome`` valid or invalid, ``mesh.ingest.error_code``, ``mesh.record_type``);
parent: the customer's span when the raw record carried a ``traceparent``.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.trace import SpanKind
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from services.ingest.config import IngestConfig
from services.ingest.tracing import (
    FLAGS,
    PARENT_SPAN_ID,
    SPAN_ID,
    TRACE_ID,
    with_trace_context,
)
from services.ingest.validation import ERROR, RECORD_TYPE, CheckedType, classify
from shared.tracing import Tracing
from shared.tracing.spans_from_ids import span_from_ids

#: The consumer group the ingest spans name (Spark's Kafka source tracks offsets itself).
GROUP = "ingest"


def sampled_records(
    raw: DataFrame, types: dict[str, CheckedType], config: IngestConfig
) -> DataFrame:
    """One row per sampled raw record: its span ids, coordinates and validation outcome."""
    traced = with_trace_context(raw, config.trace_sample_ratio)
    sampled = traced.where(F.col(FLAGS) == F.lit("01")).select(
        "*",
        F.col(TRACE_ID).alias("trace_id"),
        F.col(SPAN_ID).alias("span_id"),
        F.col(PARENT_SPAN_ID).alias("parent_span_id"),
    )
    classified = classify(sampled, types, config.max_record_bytes)
    return classified.select(
        "trace_id",
        "span_id",
        "parent_span_id",
        "topic",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("kafka_ms"),
        F.col(RECORD_TYPE).alias("record_type"),
        F.col(ERROR).getField("code").alias("error_code"),
    )


class SpanExporter:
    """The ``foreachBatch`` handler: the batch's sampled rows become spans in the exporter."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing
        self.exported = 0

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        rows = frame.collect()  # sampled records only: a small share of the batch
        end_ns = time.time_ns()
        spans = [self._span(row.asDict(), end_ns) for row in rows]
        self.exported += self.tracing.submit(spans)

    def _span(self, row: dict[str, Any], end_ns: int) -> Any:
        outcome = "valid" if row["error_code"] is None else "invalid"
        attributes = {
            "messaging.system": "kafka",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": row["topic"],
            "messaging.destination.partition.id": str(row["partition"]),
            "messaging.kafka.offset": int(row["offset"]),
            "messaging.consumer.group.name": GROUP,
            "mesh.record_type": row["record_type"] or "",
            "mesh.ingest.outcome": outcome,
        }
        if row["error_code"] is not None:
            attributes["mesh.ingest.error_code"] = row["error_code"]
        start_ns = min(int(row["kafka_ms"]) * 1_000_000, end_ns)
        return span_from_ids(
            row["trace_id"],
            row["span_id"],
            row["parent_span_id"],
            f"{row['topic']} process",
            kind=SpanKind.CONSUMER,
            start_ns=start_ns,
            end_ns=end_ns,
            attributes=attributes,
            resource=self.tracing.resource,
        )


def start_trace_export(
    spark: SparkSession,
    raw: DataFrame,
    types: dict[str, CheckedType],
    config: IngestConfig,
    checkpoint: str,
    tracing: Tracing,
) -> StreamingQuery:
    """The ``ingest-traces`` query (only call it with tracing enabled)."""
    return (
        sampled_records(raw, types, config)
        .writeStream.foreachBatch(SpanExporter(tracing))
        .option("checkpointLocation", checkpoint)
        .queryName("ingest-traces")
        .trigger(processingTime=config.trace_trigger)
        .start()
    )
