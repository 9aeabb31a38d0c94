"""Kafka spans following the OpenTelemetry messaging semantic conventions.

* :func:`process_span` - a CONSUMER span ``"<topic> process"`` for one consumed record, a child of
  the context the record carried (:func:`shared.tracing.headers.extract`).
* :func:`publish_span` - a PRODUCER span ``"<topic> publish"`` for one produced record;
  :func:`publish_headers` puts its context in that record's headers.

Attribute names are the semantic-conventions package's constants (``messaging.system``,
``messaging.operation.type``, ``messaging.operation.name``, ``messaging.destination.name``,
``messaging.destination.partition.id``, ``messaging.kafka.offset``,
``messaging.consumer.group.name``, ``messaging.kafka.message.key``). In the conventions of
opentelemetry-semantic-conventions 0.66b2 the producer's operation type is ``send`` (``publish``
is deprecated); the span names keep the ``<topic> publish`` / ``<topic> process`` form the
project settled on (the conventions now suggest ``send <topic>`` / ``process <topic>``).

Cheap when nothing is recorded: attributes are only built for a recording span. A runtime can
avoid even creating a span for a record whose ``traceparent`` is not sampled by testing
:func:`shared.tracing.headers.is_sampled` first and passing the headers on with
:func:`shared.tracing.headers.trace_headers`.

Clients are not wrapped or patched here: the runtime calls these around its own poll and
produce, e.g.::

    parent = extract(message.headers())
    span = process_span(tracer, message.topic(), message.partition(), message.offset(),
                        group, parent)
    with trace.use_span(span, end_on_exit=True):
        for alert in detect(record, ctx):
            with trace.use_span(publish_span(tracer, "alerts", span), end_on_exit=True) as p:
                producer.produce("alerts", value, key, headers=publish_headers(p))
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.semconv._incubating.attributes.messaging_attributes import (
    MESSAGING_CONSUMER_GROUP_NAME,
    MESSAGING_DESTINATION_NAME,
    MESSAGING_DESTINATION_PARTITION_ID,
    MESSAGING_KAFKA_MESSAGE_KEY,
    MESSAGING_KAFKA_OFFSET,
    MESSAGING_OPERATION_NAME,
    MESSAGING_OPERATION_TYPE,
    MESSAGING_SYSTEM,
    MessagingOperationTypeValues,
    MessagingSystemValues,
)
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from shared.tracing.headers import ProducedHeaders, inject

KAFKA = MessagingSystemValues.KAFKA.value
PROCESS = MessagingOperationTypeValues.PROCESS.value
SEND = MessagingOperationTypeValues.SEND.value


def process_span(
    tracer: Tracer,
    topic: str,
    partition: int,
    offset: int,
    group: str,
    parent_context: Context,
    *,
    key: str | None = None,
    start_time_ns: int | None = None,
) -> Span:
    """Start (not activate) the CONSUMER span ``"<topic> process"`` for one record.

    ``parent_context`` is what :func:`~shared.tracing.headers.extract` returned; an empty
    Context starts a new trace (the root sampler decides). The current context is never used,
    so a span of the previous record cannot become the parent by accident.
    """
    span = tracer.start_span(
        f"{topic} process", parent_context, SpanKind.CONSUMER, start_time=start_time_ns
    )
    if span.is_recording():
        span.set_attributes(process_attributes(topic, partition, offset, group, key))
    return span


def publish_span(
    tracer: Tracer,
    topic: str,
    parent: Span | Context | None = None,
    *,
    partition: int | None = None,
    key: str | None = None,
    start_time_ns: int | None = None,
) -> Span:
    """Start (not activate) the PRODUCER span ``"<topic> publish"`` for one produced record.

    ``parent`` is the span (e.g. the record's process span) or Context it belongs to; None
    means the current context.
    """
    context = trace.set_span_in_context(parent) if isinstance(parent, Span) else parent
    span = tracer.start_span(
        f"{topic} publish", context, SpanKind.PRODUCER, start_time=start_time_ns
    )
    if span.is_recording():
        span.set_attributes(publish_attributes(topic, partition, key))
    return span


def process_attributes(
    topic: str, partition: int, offset: int, group: str, key: str | None = None
) -> dict[str, AttributeValue]:
    """The attributes of a ``"<topic> process"`` span."""
    attributes: dict[str, AttributeValue] = {
        MESSAGING_SYSTEM: KAFKA,
        MESSAGING_OPERATION_TYPE: PROCESS,
        MESSAGING_OPERATION_NAME: PROCESS,
        MESSAGING_DESTINATION_NAME: topic,
        MESSAGING_DESTINATION_PARTITION_ID: str(partition),
        MESSAGING_KAFKA_OFFSET: offset,
        MESSAGING_CONSUMER_GROUP_NAME: group,
    }
    if key is not None:
        attributes[MESSAGING_KAFKA_MESSAGE_KEY] = key
    return attributes


def publish_attributes(
    topic: str, partition: int | None = None, key: str | None = None
) -> dict[str, AttributeValue]:
    """The attributes of a ``"<topic> publish"`` span (no partition before it is known)."""
    attributes: dict[str, AttributeValue] = {
        MESSAGING_SYSTEM: KAFKA,
        MESSAGING_OPERATION_TYPE: SEND,
        MESSAGING_OPERATION_NAME: SEND,
        MESSAGING_DESTINATION_NAME: topic,
    }
    if partition is not None and partition >= 0:
        attributes[MESSAGING_DESTINATION_PARTITION_ID] = str(partition)
    if key is not None:
        attributes[MESSAGING_KAFKA_MESSAGE_KEY] = key
    return attributes


def publish_headers(span: Span, headers: ProducedHeaders | None = None) -> ProducedHeaders:
    """``headers`` plus the ``traceparent`` (and ``tracestate``) of ``span``, for produce().

    A non-recording span still carries the trace id and flags of its parent, so with tracing
    off or the record not sampled the trace still continues downstream (unsampled stays so).
    """
    return inject(trace.set_span_in_context(span), headers)


def record_failure(span: Span, error: BaseException) -> None:
    """Mark ``span`` failed by ``error``: status ERROR, ``error.type``, an exception event."""
    if span.is_recording():
        span.set_attribute(ERROR_TYPE, type(error).__qualname__)
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
