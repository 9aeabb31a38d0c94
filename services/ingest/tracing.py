"""W3C trace context for every record ingest routes.

A raw record that arrives with a valid ``traceparent`` header keeps its trace id and its sampling
decision: ingest's span becomes a child of the customer's span. One without gets a new trace,
sampled exactly as OpenTelemetry's ``TraceIdRatioBased`` sampler would decide for that trace id
(its lower 64 bits below ``ratio * 2**64``), so every service downstream, parent-based, follows
one decision per trace. Ids are derived from the
record's source coordinates (topic, partition, offset) rather than drawn at random, so a replay
after a crash produces the same trace and span ids for the same record, and the same headers.

:func:`with_trace_context` works all of it out once per record, as columns, before routing (or
the span export) uses it: the incoming context is looked up in the headers once, not once per
place that needs it (a CASE branch is not covered by Spark's common-subexpression elimination, and
the routing plan was ten times larger for it).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_VALID = r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
_ZERO_TRACE = "0" * 32

#: Columns :func:`with_trace_context` adds.
TRACE_ID = "_trace_id"
SPAN_ID = "_span_id"
PARENT_SPAN_ID = "_parent_span_id"  # NULL when ingest starts the trace
FLAGS = "_trace_flags"  # "01" sampled, "00" not
TRACESTATE = "_tracestate"  # the incoming one, or NULL
_INCOMING = "_traceparent_in"
_USABLE = "_traceparent_usable"


def _header(name: str) -> Column:
    """The value of the first header called ``name`` in the Kafka row, as a string."""
    return F.expr(
        f"CAST(try_element_at(filter(coalesce(headers, array()), h -> h.key = '{name}'), 1).value "
        "AS STRING)"
    )


def with_trace_context(rows: DataFrame, sample_ratio: float) -> DataFrame:
    """Kafka rows with their trace context as columns: TRACE_ID (the incoming one, else derived
    from the source coordinates), SPAN_ID (ingest's), PARENT_SPAN_ID, FLAGS (the incoming
    decision, else TraceIdRatioBased's at ``sample_ratio``) and TRACESTATE."""
    read = rows.select(
        "*",
        F.lower(F.trim(_header("traceparent"))).alias(_INCOMING),
        _header("tracestate").alias(TRACESTATE),
    )
    incoming = F.col(_INCOMING)
    usable = incoming.rlike(_VALID) & (F.substring(incoming, 4, 32) != _ZERO_TRACE)
    read = read.select("*", usable.alias(_USABLE))
    new_trace = F.substring(F.sha2(F.concat(F.lit("trace:"), _coordinates()), 256), 1, 32)
    ids = read.select(
        "*",
        F.when(F.col(_USABLE), F.substring(incoming, 4, 32)).otherwise(new_trace).alias(TRACE_ID),
        F.substring(F.sha2(F.concat(F.lit("ingest:"), _coordinates()), 256), 1, 16).alias(SPAN_ID),
        F.when(F.col(_USABLE), F.substring(incoming, 37, 16)).alias(PARENT_SPAN_ID),
    )
    bound = round(max(0.0, min(1.0, sample_ratio)) * 2**64)
    low_bits = F.conv(F.substring(F.col(TRACE_ID), 17, 16), 16, 10).cast("decimal(20,0)")
    # The bound goes to the JVM as text: above 0.5 it no longer fits a Java long (2**64 at 1.0).
    ratio = F.when(low_bits < F.lit(str(bound)).cast("decimal(20,0)"), "01").otherwise("00")
    decided = F.when(F.col(_USABLE), F.substring(incoming, 54, 2)).otherwise(ratio)
    return ids.select("*", decided.alias(FLAGS)).drop(_INCOMING, _USABLE)


def _coordinates() -> Column:
    return F.concat_ws(
        ":", "topic", F.col("partition").cast("string"), F.col("offset").cast("string")
    )


def trace_headers() -> Column:
    """``traceparent`` plus the incoming ``tracestate`` when there is one (needs the columns of
    :func:`with_trace_context`)."""
    traceparent = F.concat(
        F.lit("00-"), F.col(TRACE_ID), F.lit("-"), F.col(SPAN_ID), F.lit("-"), F.col(FLAGS)
    )
    parent = F.struct(F.lit("traceparent").alias("key"), traceparent.cast("binary").alias("value"))
    state = F.col(TRACESTATE)
    with_state = F.array(
        parent, F.struct(F.lit("tracestate").alias("key"), state.cast("binary").alias("value"))
    )
    return F.when(state.isNotNull(), with_state).otherwise(F.array(parent))
