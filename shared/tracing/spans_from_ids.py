"""Finished spans with ids computed elsewhere, for ingest.

Ingest derives each routed record's trace and span ids in Spark (``services.ingest.tracing``),
deterministically from the record's source coordinates, and writes them into the record's
``traceparent``. The span describing that work must carry exactly those ids, so it cannot come
from a tracer (which draws random span ids). :func:`span_from_ids` builds the finished span
directly; :meth:`shared.tracing.setup.Tracing.submit` queues it for the same bounded, counted
export as every other span::

    tracing = setup_tracing("ingest", instance_id("ingest-0"))
    tracing.submit([
        span_from_ids(trace_id, span_id, parent_span_id, "raw.transactions process",
                      kind=SpanKind.CONSUMER, start_ns=t0, end_ns=t1,
                      attributes={...}, resource=tracing.resource),
    ])

The span is always marked sampled (asking to export it is the sampling decision).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.util.types import AttributeValue

from shared.tracing.setup import SCOPE_NAME

_HEX = re.compile(r"[0-9a-f]+")


def span_from_ids(
    trace_id: str | int,
    span_id: str | int,
    parent_span_id: str | int | None,
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    start_ns: int,
    end_ns: int,
    attributes: Mapping[str, AttributeValue] | None = None,
    status: Status | StatusCode = StatusCode.UNSET,
    resource: Resource | None = None,
    trace_state: str | None = None,
    parent_is_remote: bool = True,
) -> ReadableSpan:
    """A finished span with exactly these ids (lower-case hex strings or ints).

    ``parent_span_id`` None makes it a trace's root. ``parent_is_remote`` says the parent ran in
    another process (the customer's system, for ingest). ``trace_state`` is a ``tracestate``
    header value. ``resource`` should be :attr:`Tracing.resource` so the span names the service
    instance. Bad ids or times raise ValueError.
    """
    trace_int = _id(trace_id, 32, "trace_id")
    state = TraceState.from_header([trace_state]) if trace_state else None
    context = SpanContext(
        trace_int, _id(span_id, 16, "span_id"), False, TraceFlags(TraceFlags.SAMPLED), state
    )
    parent = None
    if parent_span_id is not None:
        parent = SpanContext(
            trace_int,
            _id(parent_span_id, 16, "parent_span_id"),
            parent_is_remote,
            TraceFlags(TraceFlags.SAMPLED),
            state,
        )
    if not 0 < start_ns <= end_ns:
        raise ValueError(f"a span needs 0 < start_ns <= end_ns, got {start_ns} and {end_ns}")
    return ReadableSpan(
        name=name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=dict(attributes or {}),
        kind=kind,
        status=status if isinstance(status, Status) else Status(status),
        start_time=start_ns,
        end_time=end_ns,
        instrumentation_scope=InstrumentationScope(SCOPE_NAME),
    )


def _id(value: str | int, digits: int, what: str) -> int:
    """An id as an int: ``digits`` lower-case hex digits or an int below 16**digits, not 0."""
    if isinstance(value, str):
        if len(value) != digits or not _HEX.fullmatch(value):
            raise ValueError(f"{what} must be {digits} lower-case hex digits, got {value!r}")
        number = int(value, 16)
    else:
        number = value
    if not 0 < number < 16**digits:
        raise ValueError(f"{what} must be a non-zero {digits * 4}-bit id, got {value!r}")
    return number
