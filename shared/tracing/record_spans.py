"""Per-record Kafka spans for hot loops, built as finished spans without the SDK's ``Span``.

Why: a detector processes a record in ~15 µs. Through the SDK's tracer, one sampled record's
process span cost ~26 µs on the processing thread (the propagator's ``extract``, the sampler,
``Span`` with its lock and bounded attributes, ``end``), so 1 % sampling alone cost ~2 % of
throughput before any export. Every record this module sees was already sampled upstream
(parent-based sampling: the runtime asks :func:`shared.tracing.headers.sampled_parent` first),
so there is nothing left to decide: a span is a start time, ids and attributes, and at
:meth:`RecordSpans.end` it becomes an SDK ``ReadableSpan`` handed to the same bounded, counted
export queue as every other span (:meth:`shared.tracing.setup.Tracing.submit`). ~4 µs a span.

The spans are the ones :mod:`shared.tracing.messaging` makes through a tracer (same names,
kinds, attributes and failure marks; the unit tests compare the two), so a trace looks the same
whichever way a service made its spans::

    spans = RecordSpans(tracing)
    parent = sampled_parent(message.headers())          # None: not traced
    span = spans.process(parent, topic, partition, offset, group, key="c-1")
    publish = spans.publish(span, "alerts", key="c-1")
    producer.produce("alerts", value, key, headers=publish.headers())
    spans.end(publish)
    spans.end(span, error)                               # error: None, or what failed
"""

from __future__ import annotations

import random
import time
import traceback
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.semconv.attributes.exception_attributes import (
    EXCEPTION_MESSAGE,
    EXCEPTION_STACKTRACE,
    EXCEPTION_TYPE,
)
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue

from shared.tracing.headers import ProducedHeaders
from shared.tracing.messaging import process_attributes, publish_attributes

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import Event

    from shared.tracing.setup import Tracing

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSAMPLED = TraceFlags(TraceFlags.DEFAULT)
#: The ratio sampler decides on a trace id's low 64 bits.
_TRACE_ID_LOW = (1 << 64) - 1
_UNSET = Status(StatusCode.UNSET)
_ERROR_MESSAGE_LIMIT = 200


class OpenSpan:
    """A started span of this process: its context, for children and headers; ended once."""

    __slots__ = ("attributes", "context", "kind", "name", "parent", "start_ns")

    def __init__(
        self,
        context: SpanContext,
        parent: SpanContext | None,
        name: str,
        kind: SpanKind,
        attributes: dict[str, AttributeValue],
    ) -> None:
        self.context = context
        self.parent = parent
        self.name = name
        self.kind = kind
        self.attributes = attributes
        self.start_ns = time.time_ns()

    def headers(self) -> ProducedHeaders:
        """``traceparent`` (and ``tracestate``) naming this span, for a record it produces."""
        context = self.context
        flags = "01" if context.trace_flags.sampled else "00"
        headers = [
            ("traceparent", f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}".encode())
        ]
        if context.trace_state:
            headers.append(("tracestate", context.trace_state.to_header().encode()))
        return headers


class RecordSpans:
    """Makes the process and publish spans of sampled records and queues them for export."""

    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing
        self._readable = ReadableSpan
        self._event = Event
        self._resource = tracing.resource
        self._scope = tracing.scope
        self._root_bound = round(tracing.config.sample_ratio * (_TRACE_ID_LOW + 1))

    def process(
        self,
        parent: SpanContext | None,
        topic: str,
        partition: int,
        offset: int,
        group: str,
        *,
        key: str | None = None,
    ) -> OpenSpan:
        """Start the CONSUMER span ``"<topic> process"`` of a record whose sampled remote
        parent is ``parent`` (from :func:`shared.tracing.headers.sampled_parent`).

        ``parent`` None (or invalid: the record's ``traceparent`` was malformed) starts a new
        trace, sampled as the service's ratio sampler would (``TraceIdRatioBased``); an
        unsampled one is not exported, but its headers still name the new trace.
        """
        attributes = process_attributes(topic, partition, offset, group, key)
        name = f"{topic} process"
        if parent is None or not parent.is_valid:
            return self._root(name, SpanKind.CONSUMER, attributes)
        return self._child(parent, name, SpanKind.CONSUMER, attributes)

    def publish(
        self, parent: OpenSpan, topic: str, *, partition: int | None = None, key: str | None = None
    ) -> OpenSpan:
        """Start the PRODUCER span ``"<topic> publish"``, a child of ``parent``."""
        attributes = publish_attributes(topic, partition, key)
        return self._child(parent.context, f"{topic} publish", SpanKind.PRODUCER, attributes)

    def end(self, span: OpenSpan, error: BaseException | None = None) -> None:
        """Finish ``span`` now (marked failed by ``error`` if given) and queue it for export;
        never blocks (a full queue drops it, counted). An unsampled span is just dropped."""
        if not span.context.trace_flags.sampled:
            return
        end_ns = time.time_ns()
        status = _UNSET
        events: tuple[Event, ...] = ()
        if error is not None:
            span.attributes[ERROR_TYPE] = type(error).__qualname__
            status = Status(StatusCode.ERROR, str(error)[:_ERROR_MESSAGE_LIMIT])
            events = (self._exception_event(error, end_ns),)
        finished = self._readable(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=self._resource,
            attributes=span.attributes,
            events=events,
            kind=span.kind,
            status=status,
            start_time=span.start_ns,
            end_time=end_ns,
            instrumentation_scope=self._scope,
        )
        self._tracing.submit((finished,))

    @staticmethod
    def _child(
        parent: SpanContext, name: str, kind: SpanKind, attributes: dict[str, AttributeValue]
    ) -> OpenSpan:
        span_id = random.getrandbits(64) or 1  # as the SDK's RandomIdGenerator: never 0
        flags = parent.trace_flags
        context = SpanContext(parent.trace_id, span_id, False, flags, parent.trace_state)
        return OpenSpan(context, parent, name, kind, attributes)

    def _root(self, name: str, kind: SpanKind, attributes: dict[str, AttributeValue]) -> OpenSpan:
        trace_id = random.getrandbits(128) or 1
        sampled = trace_id & _TRACE_ID_LOW < self._root_bound  # TraceIdRatioBased's rule
        context = SpanContext(
            trace_id, random.getrandbits(64) or 1, False, _SAMPLED if sampled else _UNSAMPLED
        )
        return OpenSpan(context, None, name, kind, attributes)

    def _exception_event(self, error: BaseException, at_ns: int) -> Event:
        """The ``exception`` event the SDK's ``record_exception`` adds (less the deprecated
        ``exception.escaped``)."""
        stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        module, name = type(error).__module__, type(error).__qualname__
        attributes: dict[str, AttributeValue] = {
            EXCEPTION_TYPE: f"{module}.{name}" if module and module != "builtins" else name,
            EXCEPTION_MESSAGE: str(error),
            EXCEPTION_STACKTRACE: stack,
        }
        return self._event("exception", attributes, at_ns)
