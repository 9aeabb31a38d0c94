"""W3C trace context for every record ingest routes.

A raw record that arrives with a valid ``traceparent`` header keeps its trace id and its sampling
decision: ingest's span becomes a child of the customer's span. One without gets a new trace,
sampled exactly as OpenTelemetry's ``TraceIdRatioBased`` sampler would decide for that trace id
(its lower 64 bits below ``ratio * 2**64``), so every service downstream, parent-based, follows
one decision per trace. Ids are derived from the
record's source coordinates (topic, partition, offset) rather than drawn at random, so a replay
after a crash produces the same trace and span ids for the same record, and the same headers.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_VALID = r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
_ZERO_TRACE = "0" * 32


def _header(name: str) -> Column:
    """The value of the first header called ``name`` in the Kafka row, as a string."""
    return F.expr(
        f"CAST(try_element_at(filter(coalesce(headers, array()), h -> h.key = '{name}'), 1).value "
        "AS STRING)"
    )


def _incoming() -> tuple[Column, Column]:
    """The record's own ``traceparent`` (lower case) and whether it is usable."""
    incoming = F.lower(F.trim(_header("traceparent")))
    return incoming, incoming.rlike(_VALID) & (F.substring(incoming, 4, 32) != _ZERO_TRACE)


def trace_id() -> Column:
    """The record's trace id: the incoming one, else derived from its source coordinates."""
    incoming, usable = _incoming()
    new_trace = F.substring(F.sha2(F.concat(F.lit("trace:"), _coordinates()), 256), 1, 32)
    return F.when(usable, F.substring(incoming, 4, 32)).otherwise(new_trace)


def span_id() -> Column:
    """Ingest's span id for the record (what the routed record names as its parent)."""
    return F.substring(F.sha2(F.concat(F.lit("ingest:"), _coordinates()), 256), 1, 16)


def parent_span_id() -> Column:
    """The span id of the incoming context, or NULL when ingest starts the trace."""
    incoming, usable = _incoming()
    return F.when(usable, F.substring(incoming, 37, 16))


def flags(sample_ratio: float) -> Column:
    """``01`` (sampled) or ``00``: the incoming decision, else TraceIdRatioBased's."""
    incoming, usable = _incoming()
    bound = round(max(0.0, min(1.0, sample_ratio)) * 2**64)
    low_bits = F.conv(F.substring(trace_id(), 17, 16), 16, 10).cast("decimal(20,0)")
    # The bound goes to the JVM as text: above 0.5 it no longer fits a Java long (2**64 at 1.0).
    ratio = F.when(low_bits < F.lit(str(bound)).cast("decimal(20,0)"), "01").otherwise("00")
    return F.when(usable, F.substring(incoming, 54, 2)).otherwise(ratio)


def traceparent(sample_ratio: float) -> Column:
    """The ``traceparent`` to send with a routed record."""
    return F.concat(
        F.lit("00-"), trace_id(), F.lit("-"), span_id(), F.lit("-"), flags(sample_ratio)
    )


def _coordinates() -> Column:
    return F.concat_ws(
        ":", "topic", F.col("partition").cast("string"), F.col("offset").cast("string")
    )


def trace_headers(sample_ratio: float) -> Column:
    """``traceparent`` plus the incoming ``tracestate`` when there is one."""
    state = _header("tracestate")
    parent = F.struct(
        F.lit("traceparent").alias("key"), traceparent(sample_ratio).cast("binary").alias("value")
    )
    with_state = F.array(
        parent, F.struct(F.lit("tracestate").alias("key"), state.cast("binary").alias("value"))
    )
    return F.when(state.isNotNull(), with_state).otherwise(F.array(parent))
