"""W3C trace context in Kafka headers: the getter/setter pair, extract, inject, is_sampled."""

from __future__ import annotations

import logging

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from shared.tracing import extract, inject, is_sampled, trace_headers
from shared.tracing.headers import GETTER, SETTER

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
SAMPLED = f"00-{TRACE}-{SPAN}-01"
UNSAMPLED = f"00-{TRACE}-{SPAN}-00"


def span_context(headers: object) -> SpanContext:
    return trace.get_current_span(extract(headers)).get_span_context()  # type: ignore[arg-type]


def test_extract_reads_traceparent_and_tracestate_from_kafka_headers() -> None:
    found = span_context(
        [("other", b"x"), ("traceparent", SAMPLED.encode()), ("tracestate", b"a=1")]
    )
    assert found.is_valid and found.is_remote
    assert f"{found.trace_id:032x}" == TRACE
    assert f"{found.span_id:016x}" == SPAN
    assert found.trace_flags.sampled
    assert found.trace_state == TraceState([("a", "1")])


def test_inject_then_extract_round_trips_the_span_context() -> None:
    sent = SpanContext(
        int(TRACE, 16), int(SPAN, 16), False, TraceFlags(0), TraceState([("vendor", "v1")])
    )
    headers = inject(trace.set_span_in_context(NonRecordingSpan(sent)))
    assert headers == [("traceparent", UNSAMPLED.encode()), ("tracestate", b"vendor=v1")]
    assert all(isinstance(k, str) and isinstance(v, bytes) for k, v in headers)
    back = span_context(headers)
    assert (back.trace_id, back.span_id, back.trace_flags, back.trace_state) == (
        sent.trace_id,
        sent.span_id,
        sent.trace_flags,
        sent.trace_state,
    )


def test_inject_adds_to_a_copy_and_replaces_an_old_traceparent() -> None:
    old = [("k", b"v"), ("traceparent", UNSAMPLED.encode())]
    context = extract([("traceparent", SAMPLED.encode())])
    headers = inject(context, old)
    assert headers == [("k", b"v"), ("traceparent", SAMPLED.encode())]
    assert old == [("k", b"v"), ("traceparent", UNSAMPLED.encode())]


def test_inject_without_a_valid_span_adds_nothing() -> None:
    assert inject(Context()) == []
    assert inject(Context(), [("k", b"v")]) == [("k", b"v")]


@pytest.mark.parametrize("headers", [None, [], [("k", b"v")], {}, [("traceparent", None)]])
def test_missing_headers_give_an_empty_context(headers: object) -> None:
    assert extract(headers) == Context()  # type: ignore[arg-type]
    assert not is_sampled(headers)  # type: ignore[arg-type]


def test_a_malformed_traceparent_is_ignored_with_one_debug_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="shared.tracing.headers")
    context = extract([("traceparent", b"00-not-a-trace-01")])
    assert not trace.get_current_span(context).get_span_context().is_valid
    lines = [r for r in caplog.records if r.name == "shared.tracing.headers"]
    assert len(lines) == 1
    assert lines[0].levelno == logging.DEBUG
    assert "00-not-a-trace-01" in lines[0].getMessage()


def test_getter_reads_dicts_capitalised_names_and_skips_empty_values() -> None:
    assert GETTER.get({"traceparent": SAMPLED.encode()}, "traceparent") == [SAMPLED]
    assert GETTER.get([("Traceparent", SAMPLED)], "traceparent") == [SAMPLED]
    assert GETTER.get([("traceparent", None), ("traceparent", b"b")], "traceparent") == ["b"]
    assert GETTER.get(None, "traceparent") is None
    assert GETTER.keys([("a", b""), ("b", None)]) == ["a", "b"]
    assert GETTER.keys(None) == []


def test_setter_writes_utf8_bytes_once_per_name() -> None:
    carrier: list[tuple[str, bytes]] = [("Traceparent", b"old")]
    SETTER.set(carrier, "traceparent", SAMPLED)
    SETTER.set(carrier, "tracestate", "a=1")
    assert carrier == [("traceparent", SAMPLED.encode()), ("tracestate", b"a=1")]


@pytest.mark.parametrize(
    "value",
    [
        SAMPLED,
        UNSAMPLED,
        f"00-{TRACE}-{SPAN}-03",  # sampled plus an unknown flag
        f"00-{TRACE}-{SPAN}-02",
        f" 00-{TRACE}-{SPAN}-01 ",
        f"00-{TRACE}-{SPAN}-01-extra",  # version 00 allows no more fields
        f"01-{TRACE}-{SPAN}-01-extra",  # a later version may add some
        f"ff-{TRACE}-{SPAN}-01",
        f"00-{'0' * 32}-{SPAN}-01",
        f"00-{TRACE}-{'0' * 16}-01",
        f"00-{TRACE.upper()}-{SPAN}-01",
        f"00-{TRACE}-{SPAN}-0B",  # upper-case flags are invalid
        f"zz-{TRACE}-{SPAN}-00",  # 55 bytes, looks unsampled, is invalid
        f"00-{TRACE}-{SPAN}",
        "garbage",
        "",
    ],
)
def test_is_sampled_on_headers_agrees_with_the_propagator(value: str) -> None:
    headers = [("traceparent", value.encode())]
    from_context = trace.get_current_span(extract(headers)).get_span_context()
    expected = from_context.is_valid and from_context.trace_flags.sampled
    assert is_sampled(headers) == expected
    assert is_sampled(extract(headers)) == expected


def test_is_sampled_reads_the_sampled_flag() -> None:
    assert is_sampled([("traceparent", SAMPLED.encode())])
    assert not is_sampled([("traceparent", UNSAMPLED.encode())])
    assert is_sampled({"traceparent": SAMPLED})


def test_trace_headers_passes_the_incoming_context_on_unchanged() -> None:
    headers: list[tuple[str, bytes | str | None]] = [
        ("k", b"v"),
        ("traceparent", UNSAMPLED.encode()),
        ("tracestate", "a=1"),
    ]
    assert trace_headers(headers) == [("traceparent", UNSAMPLED.encode()), ("tracestate", b"a=1")]
    assert trace_headers(None) == []
