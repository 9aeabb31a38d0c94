"""W3C trace context for every record ingest routes.

A raw record that arrives with a valid ``traceparent`` header keeps its trace id: ingest's span
becomes a child of the customer's span. One without gets a new trace. Ids are derived from the
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


def traceparent() -> Column:
    """The ``traceparent`` to send with a routed record."""
    incoming = F.lower(F.trim(_header("traceparent")))
    usable = incoming.rlike(_VALID) & (F.substring(incoming, 4, 32) != _ZERO_TRACE)
    coordinates = F.concat_ws(
        ":", "topic", F.col("partition").cast("string"), F.col("offset").cast("string")
    )
    new_trace = F.substring(F.sha2(F.concat(F.lit("trace:"), coordinates), 256), 1, 32)
    span = F.substring(F.sha2(F.concat(F.lit("ingest:"), coordinates), 256), 1, 16)
    trace_id = F.when(usable, F.substring(incoming, 4, 32)).otherwise(new_trace)
    flags = F.when(usable, F.substring(incoming, 54, 2)).otherwise(F.lit("01"))
    return F.concat(F.lit("00-"), trace_id, F.lit("-"), span, F.lit("-"), flags)


def trace_headers() -> Column:
    """``traceparent`` plus the incoming ``tracestate`` when there is one."""
    state = _header("tracestate")
    parent = F.struct(
        F.lit("traceparent").alias("key"), traceparent().cast("binary").alias("value")
    )
    with_state = F.array(
        parent, F.struct(F.lit("tracestate").alias("key"), state.cast("binary").alias("value"))
    )
    return F.when(state.isNotNull(), with_state).otherwise(F.array(parent))
