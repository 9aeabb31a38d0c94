"""Ingest's sampling decision in Spark equals OpenTelemetry's TraceIdRatioBased, at every ratio.

Rows shaped like the Kafka source's (topic, partition, offset, headers) go through the columns
ingest routes with; each new trace's ``01``/``00`` must be what the SDK's sampler decides for
that trace id, from 0 to 1 (above 0.5 the bound no longer fits a Java long), and an incoming
``traceparent`` keeps its own flag.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased
from pyspark.sql import functions as F

from services.ingest.tracing import FLAGS, TRACE_ID, with_trace_context

pytestmark = pytest.mark.integration

ROWS = 400
INCOMING = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _frame(spark: Any) -> Any:
    rows = [("raw.transactions", n % 4, n, None) for n in range(ROWS)]
    rows.append(("raw.transactions", 0, ROWS, [("traceparent", bytearray(INCOMING.encode()))]))
    schema = (
        "topic string, partition int, offset long, headers array<struct<key:string,value:binary>>"
    )
    return spark.createDataFrame(rows, schema)


@pytest.mark.parametrize("ratio", [0.0, 0.01, 0.5, 0.75, 0.999, 1.0])
def test_new_traces_are_sampled_as_trace_id_ratio_based_decides(spark: Any, ratio: float) -> None:
    decided = with_trace_context(_frame(spark), ratio).select(
        F.col(TRACE_ID).alias("trace"), F.col(FLAGS).alias("flags")
    )
    rows = decided.collect()
    sampler = TraceIdRatioBased(ratio)
    new = [r for r in rows if r["trace"] != INCOMING[3:35]]
    assert len(new) == ROWS
    for row in new:
        result = sampler.should_sample(None, int(row["trace"], 16), "ingest")
        assert (row["flags"] == "01") == (result.decision is Decision.RECORD_AND_SAMPLE), row
    sampled = sum(r["flags"] == "01" for r in new)
    if ratio == 1.0:
        assert sampled == ROWS
    if ratio == 0.0:
        assert sampled == 0
    incoming = [r for r in rows if r["trace"] == INCOMING[3:35]]
    assert [r["flags"] for r in incoming] == ["01"]  # the sender's decision holds
