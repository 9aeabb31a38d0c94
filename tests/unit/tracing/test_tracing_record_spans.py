"""Spans built directly (record_spans) are the spans the tracer makes (messaging), and
sampled_parent reads the parent extract would."""

from __future__ import annotations

import logging

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from shared.tracing import (
    extract,
    process_span,
    publish_headers,
    publish_span,
    record_failure,
    sampled_parent,
)
from shared.tracing.record_spans import RecordSpans

TRACE, SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
SAMPLED = [("traceparent", f"00-{TRACE}-{SPAN}-01".encode()), ("tracestate", b"vendor=a1")]


def _via_tracer(memory, headers, error=None):
    tracer = memory.tracing.tracer
    process = process_span(tracer, "transactions", 3, 41, "g", extract(headers), key="c-1")
    publish = publish_span(tracer, "alerts", process, key="c-1")
    carried = publish_headers(publish)
    publish.end()
    if error is not None:
        record_failure(process, error)
    process.end()
    return carried


def _direct(memory, headers, error=None):
    spans = RecordSpans(memory.tracing)
    process = spans.process(sampled_parent(headers), "transactions", 3, 41, "g", key="c-1")
    publish = spans.publish(process, "alerts", key="c-1")
    carried = publish.headers()
    spans.end(publish)
    spans.end(process, error)
    return carried


def _shape(span, ids):
    """What a trace viewer shows of a span; span ids replaced by their order of appearance."""
    parent = span.parent.span_id if span.parent else None
    return {
        "name": span.name,
        "kind": span.kind,
        "trace": span.context.trace_id,
        "id": ids.setdefault(span.context.span_id, len(ids)),
        "parent": ids.setdefault(parent, len(ids)) if parent is not None else None,
        "parent remote": span.parent.is_remote if span.parent else None,
        "sampled": span.context.trace_flags.sampled,
        "trace state": span.context.trace_state.to_header(),
        "attributes": dict(span.attributes),
        "status": (span.status.status_code, span.status.description),
        "events": [
            (e.name, {k: v for k, v in e.attributes.items() if k != "exception.stacktrace"})
            for e in span.events
        ],
        "resource": dict(span.resource.attributes),
        "scope": (span.instrumentation_scope.name, span.instrumentation_scope.version),
    }


@pytest.mark.parametrize("error", [None, ValueError("amount is missing")])
def test_direct_spans_equal_the_tracers_spans(memory_tracing, error) -> None:
    by_tracer, direct = memory_tracing(), memory_tracing()
    carried_by_tracer = _via_tracer(by_tracer, SAMPLED, error)
    carried_direct = _direct(direct, SAMPLED, error)

    ids_a: dict = {int(SPAN, 16): "remote parent"}
    ids_b: dict = {int(SPAN, 16): "remote parent"}
    expected = [_shape(s, ids_a) for s in by_tracer.finished()]
    actual = [_shape(s, ids_b) for s in direct.finished()]
    for shape in expected:  # the SDK adds the deprecated exception.escaped; direct spans do not
        for _, attributes in shape["events"]:
            attributes.pop("exception.escaped", None)
    assert actual == expected
    assert [k for k, _ in carried_direct] == [k for k, _ in carried_by_tracer]
    if error is not None:
        assert actual[1]["status"] == (StatusCode.ERROR, "amount is missing")


def test_a_direct_span_is_timed_and_its_stack_is_kept(memory_tracing) -> None:
    memory = memory_tracing()
    spans = RecordSpans(memory.tracing)
    span = spans.process(sampled_parent(SAMPLED), "transactions", 0, 1, "g")
    try:
        raise KeyError("state")
    except KeyError as error:
        spans.end(span, error)
    (finished,) = memory.finished()
    assert 0 < finished.start_time <= finished.end_time
    (event,) = finished.events
    assert "raise KeyError" in event.attributes["exception.stacktrace"]
    assert finished.attributes["error.type"] == "KeyError"


def test_publish_headers_name_the_publish_span_and_carry_the_trace_state(memory_tracing) -> None:
    memory = memory_tracing()
    spans = RecordSpans(memory.tracing)
    process = spans.process(sampled_parent(SAMPLED), "transactions", 0, 1, "g")
    publish = spans.publish(process, "alerts")
    headers = dict(publish.headers())
    assert headers["traceparent"] == f"00-{TRACE}-{publish.context.span_id:016x}-01".encode()
    assert headers["tracestate"] == b"vendor=a1"
    # What a consumer of the alert extracts is the publish span, in the same trace.
    child = trace.get_current_span(extract(list(headers.items()))).get_span_context()
    assert (child.trace_id, child.span_id) == (int(TRACE, 16), publish.context.span_id)
    assert publish.kind is SpanKind.PRODUCER and process.kind is SpanKind.CONSUMER


VALID_UNSAMPLED = [("traceparent", f"00-{TRACE}-{SPAN}-00".encode())]
MALFORMED = [
    [("traceparent", f"ff-{TRACE}-{SPAN}-01".encode())],
    [("traceparent", f"00-{'0' * 32}-{SPAN}-01".encode())],
    [("traceparent", f"00-{TRACE}-{'0' * 16}-01".encode())],
    [("traceparent", f"00-{TRACE}-{SPAN}-01-extra".encode())],
    [("traceparent", f"00-{TRACE.upper()}-{SPAN}-01".encode())],
    [("traceparent", b"garbage")],
]


@pytest.mark.parametrize(
    "headers",
    [
        SAMPLED,
        [("Traceparent", f"00-{TRACE}-{SPAN}-01")],
        {"traceparent": f"00-{TRACE}-{SPAN}-03".encode()},
        [("x", b"y"), ("traceparent", f"01-{TRACE}-{SPAN}-01-later-field".encode())],
        VALID_UNSAMPLED,
        *MALFORMED,
        [("traceparent", None)],
        [],
        None,
    ],
)
def test_sampled_parent_agrees_with_extract(headers) -> None:
    context = trace.get_current_span(extract(headers)).get_span_context()
    parent = sampled_parent(headers)
    if headers in MALFORMED:  # extract ignores it too; sampled_parent says so
        assert not context.is_valid
        assert parent is not None and not parent.is_valid
    elif not (context.is_valid and context.trace_flags.sampled):
        assert parent is None
    else:
        assert parent is not None
        assert (parent.trace_id, parent.span_id, parent.is_remote) == (
            context.trace_id,
            context.span_id,
            True,
        )
        assert parent.trace_state.to_header() == context.trace_state.to_header()


@pytest.mark.parametrize("ratio", [0.0, 1.0])
def test_a_malformed_traceparent_starts_a_new_trace_sampled_at_the_ratio(
    memory_tracing, ratio
) -> None:
    memory = memory_tracing(sample_ratio=ratio)
    spans = RecordSpans(memory.tracing)
    parent = sampled_parent(MALFORMED[-1])
    process = spans.process(parent, "transactions", 0, 1, "g")
    publish = spans.publish(process, "alerts")
    (_, traceparent), *_ = publish.headers()
    _, trace_id, _, flags = traceparent.decode().split("-")
    assert trace_id != TRACE and int(trace_id, 16) == process.context.trace_id
    assert flags == ("01" if ratio else "00")
    spans.end(publish)
    spans.end(process)
    finished = memory.finished()
    if ratio:
        assert [s.name for s in finished] == ["alerts publish", "transactions process"]
        assert finished[1].parent is None  # the root of the new trace
    else:
        assert finished == []


def test_new_traces_are_sampled_at_about_the_ratio(memory_tracing) -> None:
    spans = RecordSpans(memory_tracing(sample_ratio=0.25).tracing)
    sampled = sum(
        spans.process(None, "t", 0, i, "g").context.trace_flags.sampled for i in range(4000)
    )
    assert 800 < sampled < 1200  # binomial(4000, 0.25): mean 1000, sd 27


def test_a_malformed_traceparent_gets_one_debug_line(caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="shared.tracing.headers"):
        assert not sampled_parent([("traceparent", b"00-zz-01")]).is_valid
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "malformed traceparent" in caplog.records[0].getMessage()
