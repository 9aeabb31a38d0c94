"""The hand-written OTLP encoder writes what the SDK's encoder writes.

Every case encodes the same spans both ways and compares the messages parsed with the official
protobuf classes, so a wrong field number, wire type or omitted default fails here.
"""

from __future__ import annotations

import math

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    Link,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)

from shared.tracing.otlp_wire import RequestEncoder

TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
RESOURCE = Resource.create({"service.name": "detector.velocity", "service.instance.id": "i-1"})
SCOPE = InstrumentationScope("detector-mesh", "1.2.3")


def span(
    name: str = "transactions process",
    *,
    span_id: int = 0x00F067AA0BA902B7,
    parent: SpanContext | None = None,
    attributes: dict | None = None,
    kind: SpanKind = SpanKind.CONSUMER,
    status: Status | None = None,
    events: tuple[Event, ...] = (),
    links: tuple[Link, ...] = (),
    trace_state: TraceState | None = None,
    resource: Resource = RESOURCE,
    scope: InstrumentationScope | None = SCOPE,
    start: int = 1_790_000_000_000_000_000,
    end: int = 1_790_000_000_000_021_000,
) -> ReadableSpan:
    return ReadableSpan(
        name=name,
        context=SpanContext(TRACE, span_id, False, SAMPLED, trace_state),
        parent=parent,
        resource=resource,
        attributes=attributes or {},
        events=events,
        links=links,
        kind=kind,
        status=status or Status(StatusCode.UNSET),
        start_time=start,
        end_time=end,
        instrumentation_scope=scope,
    )


def assert_same_as_sdk(spans: list[ReadableSpan]) -> ExportTraceServiceRequest:
    ours = ExportTraceServiceRequest.FromString(RequestEncoder().encode(spans))
    assert ours == encode_spans(spans)
    return ours


REMOTE_PARENT = SpanContext(TRACE, 0x1111111111111111, True, SAMPLED)
LOCAL_PARENT = SpanContext(TRACE, 0x2222222222222222, False, SAMPLED)


@pytest.mark.parametrize(
    "case",
    [
        span(),
        span(parent=REMOTE_PARENT),
        span(parent=LOCAL_PARENT, kind=SpanKind.PRODUCER, name="alerts publish"),
        span(kind=SpanKind.INTERNAL),
        span(kind=SpanKind.SERVER),
        span(kind=SpanKind.CLIENT),
        span(trace_state=TraceState([("vendor", "a=1"), ("other", "x")])),
        span(status=Status(StatusCode.ERROR, "ValueError: no amount")),
        span(status=Status(StatusCode.OK)),
        span(name="", start=0, end=0),
        span(name="Überweisung ✓ process"),
        span(span_id=0xFFFFFFFFFFFFFFFF, parent=SpanContext(TRACE, 1, True, SAMPLED)),
    ],
    ids=lambda s: f"{s.name}-{s.kind.name}-{s.status.status_code.name}",
)
def test_span_fields_match_the_sdk_encoder(case: ReadableSpan) -> None:
    assert_same_as_sdk([case])


def test_every_attribute_type_matches_the_sdk_encoder() -> None:
    attributes = {
        "messaging.system": "kafka",
        "flag": True,
        "off": False,
        "zero": 0,
        "offset": 1_234_567,
        "negative": -42,
        "int64.min": -(2**63),
        "int64.max": 2**63 - 1,
        "ratio": 0.25,
        "nan": math.nan,
        "inf": -math.inf,
        "bytes": b"\x00\xff",
        "empty": "",
        "unicode": "Zürich — 東京",
        "long": "x" * 300,
        "strings": ("a", "b"),
        "ints": [1, -2, 3],
        "floats": [0.5, 1.5],
        "bools": (True, False),
        "mixed": ["a", 1],
        "empty list": [],
        "mapping": {"k": "v", "n": 2},
    }
    parsed = assert_same_as_sdk([span(attributes=attributes)])
    kinds = {kv.key: kv.value.WhichOneof("value") for kv in parsed.resource_spans[0]
             .scope_spans[0].spans[0].attributes}  # fmt: skip
    assert kinds["flag"] == "bool_value" and kinds["offset"] == "int_value"
    assert kinds["ratio"] == "double_value" and kinds["ints"] == "array_value"
    assert kinds["mapping"] == "kvlist_value" and kinds["bytes"] == "bytes_value"


def test_an_attribute_otlp_cannot_hold_is_left_out_and_the_rest_is_kept() -> None:
    spans = [span(attributes={"ok": "yes", "odd": object(), "n": 1})]
    parsed = ExportTraceServiceRequest.FromString(RequestEncoder().encode(spans))
    keys = [kv.key for kv in parsed.resource_spans[0].scope_spans[0].spans[0].attributes]
    assert keys == ["ok", "n"]


def test_events_and_links_match_the_sdk_encoder() -> None:
    events = (
        Event("exception", {"exception.type": "ValueError", "exception.message": "bad"}, 5),
        Event("retry", {}, 7),
    )
    links = (
        Link(REMOTE_PARENT, {"why": "batched"}),
        Link(SpanContext(TRACE + 1, 3, False, SAMPLED, TraceState([("k", "v")]))),
    )
    spans = [span(events=events, links=links)]
    ours = ExportTraceServiceRequest.FromString(RequestEncoder().encode(spans))
    # One deliberate difference: OTLP's Link has a trace_state, which the SDK leaves out.
    ours_links = ours.resource_spans[0].scope_spans[0].spans[0].links
    assert [link.trace_state for link in ours_links] == ["", "k=v"]
    ours_links[1].trace_state = ""
    assert ours == encode_spans(spans)


def test_spans_group_by_resource_then_scope_in_first_seen_order() -> None:
    other_resource = Resource.create({"service.name": "ingest"}, schema_url="https://s/1.0")
    other_scope = InstrumentationScope("other", "9", "https://scope/1", {"lib": "x"})
    spans = [
        span(span_id=1),
        span(span_id=2, resource=other_resource),
        span(span_id=3, scope=other_scope),
        span(span_id=4, resource=other_resource, scope=None),
        span(span_id=5),
    ]
    parsed = assert_same_as_sdk(spans)
    layout = [
        [[s.span_id[-1] for s in scoped.spans] for scoped in group.scope_spans]
        for group in parsed.resource_spans
    ]
    assert layout == [[[1, 5], [3]], [[2], [4]]]


def test_an_empty_batch_is_an_empty_request() -> None:
    assert RequestEncoder().encode([]) == b""
    assert_same_as_sdk([])


def test_a_reused_encoder_gives_the_same_bytes_each_time() -> None:
    # Resource and scope bytes are kept between batches: they must not leak into the next one.
    encoder = RequestEncoder()
    spans = [span(span_id=i + 1, attributes={"i": i}) for i in range(3)]
    first = encoder.encode(spans)
    encoder.encode([span(resource=Resource.create({"service.name": "x"}))])
    assert encoder.encode(spans) == first
