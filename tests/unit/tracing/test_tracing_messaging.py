"""Kafka spans per the messaging semantic conventions: names, kinds, attributes, parentage."""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, StatusCode
from tracing_memory import MemoryTracing

from shared.tracing import (
    extract,
    is_sampled,
    process_span,
    publish_headers,
    publish_span,
    record_failure,
)

MakeTracing = Callable[..., MemoryTracing]
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
INGEST_SPAN = "00f067aa0ba902b7"


def record_headers(sampled: bool = True) -> list[tuple[str, bytes]]:
    return [("traceparent", f"00-{TRACE}-{INGEST_SPAN}-{'01' if sampled else '00'}".encode())]


def test_process_span_is_a_consumer_child_of_the_records_context(
    memory_tracing: MakeTracing,
) -> None:
    memory = memory_tracing(sample_ratio=0.0)
    parent = extract(record_headers())
    span = process_span(
        memory.tracing.tracer, "records.transactions", 3, 42, "detector.velocity", parent, key="c1"
    )
    span.end()
    (done,) = memory.finished()
    assert done.name == "records.transactions process"
    assert done.kind is SpanKind.CONSUMER
    assert done.context is not None and done.parent is not None
    assert f"{done.context.trace_id:032x}" == TRACE
    assert f"{done.parent.span_id:016x}" == INGEST_SPAN
    assert dict(done.attributes or {}) == {
        "messaging.system": "kafka",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": "records.transactions",
        "messaging.destination.partition.id": "3",
        "messaging.kafka.offset": 42,
        "messaging.consumer.group.name": "detector.velocity",
        "messaging.kafka.message.key": "c1",
    }


def test_publish_span_is_a_producer_child_whose_context_goes_into_the_headers(
    memory_tracing: MakeTracing,
) -> None:
    memory = memory_tracing()
    tracer = memory.tracing.tracer
    process = process_span(tracer, "records.transactions", 0, 7, "g", extract(record_headers()))
    publish = publish_span(tracer, "alerts", process, partition=1, key="c1")
    headers = publish_headers(publish, [("k", b"v")])
    publish.end()
    process.end()
    done = {s.name: s for s in memory.finished()}
    sent, parent = done["alerts publish"], done["records.transactions process"]
    assert sent.kind is SpanKind.PRODUCER
    assert sent.parent is not None and parent.context is not None and sent.context is not None
    assert sent.parent.span_id == parent.context.span_id
    assert dict(sent.attributes or {}) == {
        "messaging.system": "kafka",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": "alerts",
        "messaging.destination.partition.id": "1",
        "messaging.kafka.message.key": "c1",
    }
    assert headers[0] == ("k", b"v")
    downstream = trace.get_current_span(extract(headers)).get_span_context()
    assert (downstream.trace_id, downstream.span_id) == (
        sent.context.trace_id,
        sent.context.span_id,
    )
    assert is_sampled(headers)


def test_publish_span_defaults_to_the_current_context(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing()
    tracer = memory.tracing.tracer
    process = process_span(tracer, "records.logins", 0, 1, "g", extract(record_headers()))
    with trace.use_span(process, end_on_exit=True):
        publish_span(tracer, "alerts").end()
    done = {s.name: s for s in memory.finished()}
    assert done["alerts publish"].parent == done["records.logins process"].context


def test_process_span_never_takes_the_current_span_as_parent(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing()
    tracer = memory.tracing.tracer
    with tracer.start_as_current_span("previous record") as previous:
        span = process_span(tracer, "records.logins", 0, 2, "g", extract(None))
    span.end()
    assert span.get_span_context().trace_id != previous.get_span_context().trace_id
    assert getattr(span, "parent", "missing") is None


def test_an_unsampled_record_gets_no_recording_span_but_its_trace_flows_on(
    memory_tracing: MakeTracing,
) -> None:
    memory = memory_tracing(sample_ratio=1.0)
    headers = record_headers(sampled=False)
    assert not is_sampled(headers)
    tracer = memory.tracing.tracer
    process = process_span(tracer, "records.logins", 0, 3, "g", extract(headers))
    publish = publish_span(tracer, "alerts", process)
    assert not process.is_recording() and not publish.is_recording()
    out = trace.get_current_span(extract(publish_headers(publish))).get_span_context()
    assert f"{out.trace_id:032x}" == TRACE and not out.trace_flags.sampled
    publish.end()
    process.end()
    assert memory.finished() == []


def test_with_tracing_off_the_incoming_context_passes_through_unchanged() -> None:
    tracer = trace.NoOpTracer()
    headers = record_headers()
    process = process_span(tracer, "records.logins", 0, 3, "g", extract(headers))
    publish = publish_span(tracer, "alerts", process)
    assert publish_headers(publish) == headers
    assert publish_headers(process_span(tracer, "t", 0, 0, "g", Context())) == []


def test_record_failure_marks_the_span_as_an_error(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing()
    span = process_span(memory.tracing.tracer, "records.logins", 0, 4, "g", extract(None))
    record_failure(span, ValueError("bad amount"))
    span.end()
    (done,) = memory.finished()
    assert done.status.status_code is StatusCode.ERROR
    assert done.status.description == "bad amount"
    assert (done.attributes or {})["error.type"] == "ValueError"
    assert [e.name for e in done.events] == ["exception"]
