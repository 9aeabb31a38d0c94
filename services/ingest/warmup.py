"""Routing's plan planned and run before the streaming queries start ("ready means warm", issue 49).

A real-time hand-over re-optimises, re-plans and generates the code of routing's plan every
checkpoint interval, and in a young JVM that code is cold: in one JVM the same plan took 2.5 s
the first time, 0.85 s the second, 0.45 s the fifth and 0.26 s the twentieth (`python -m
bench.routing_plan_warmup`, docs/benchmarks.md), while a running ingest reaches its tenth
hand-over only five minutes in. So the job can plan and run routing's very transform
``MESH_INGEST_WARMUP_ROUNDS`` times over one row per record type shaped like the Kafka source,
into Spark's noop sink, before its queries start. Nothing is read from or written to Kafka; the
rows need not be valid (planning is what warms). Off (0) by default until it is measured on the
whole mesh: each round costs the start ~0.3-2.5 s of a core.
"""

from __future__ import annotations

import datetime as dt
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from services.ingest.config import IngestConfig
from services.ingest.inputs import IngestInputs
from services.ingest.metrics import observe_outcomes
from services.ingest.routing import route
from services.ingest.validation import ERROR

#: The Kafka source's columns, as classification reads them.
KAFKA_SOURCE = T.StructType([
    T.StructField("key", T.BinaryType()), T.StructField("value", T.BinaryType()),
    T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()), T.StructField("timestamp", T.TimestampType()),
    T.StructField("timestampType", T.IntegerType()),
    T.StructField("headers", T.ArrayType(T.StructType([
        T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]))),
])  # fmt: skip


def warm_routing(
    spark: SparkSession, inputs: IngestInputs, config: IngestConfig, instance_id: str, rounds: int
) -> list[float]:
    """Plan and run routing's transform ``rounds`` times to the noop sink; each round's seconds."""
    if rounds <= 0:
        return []
    now = dt.datetime.now(dt.UTC)
    rows = [(b"warm-up", b"{}", f"raw.{name}", 0, n, now, 0, [])
            for n, name in enumerate(sorted(inputs.types))]  # fmt: skip
    raw = spark.createDataFrame(rows, KAFKA_SOURCE)
    routed = route(observe_outcomes(inputs.classified(raw, config), F.col(ERROR)), inputs.types,
                   inputs.catalogue, config.records_prefix, config.invalid_topic, instance_id,
                   config.trace_sample_ratio)  # fmt: skip
    took = []
    for _ in range(rounds):
        began = time.monotonic()
        routed.write.format("noop").mode("overwrite").save()
        took.append(time.monotonic() - began)
    return took


def said(took: list[float]) -> str:
    """The job's line about its warm-up."""
    return (f"ingest: routing's plan warmed {len(took)} times in {sum(took):.1f} s (first "
            f"{took[0]:.2f} s, last {took[-1]:.2f} s)")  # fmt: skip
