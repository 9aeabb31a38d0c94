"""Finished spans with given ids (ingest's, computed in Spark) export with exactly those ids."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opentelemetry.trace import SpanKind, Status, StatusCode
from tracing_memory import INSTANCE, MemoryTracing

from shared.settings import Settings
from shared.tracing import TracingStats, extract, process_span, setup_tracing
from shared.tracing.spans_from_ids import span_from_ids

MakeTracing = Callable[..., MemoryTracing]
TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"
CUSTOMER_SPAN = "00f067aa0ba902b7"


def test_the_exported_span_carries_exactly_the_given_ids_and_parent(
    memory_tracing: MakeTracing,
) -> None:
    memory = memory_tracing(sample_ratio=0.0)  # sampling does not apply: the caller decided
    span = span_from_ids(
        TRACE,
        SPAN,
        CUSTOMER_SPAN,
        "raw.transactions process",
        kind=SpanKind.CONSUMER,
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_000_002_000_000,
        attributes={"mesh.validation.outcome": "valid", "messaging.kafka.offset": 12},
        status=StatusCode.OK,
        resource=memory.tracing.resource,
        trace_state="vendor=1",
    )
    assert memory.tracing.submit([span]) == 1
    (done,) = memory.finished()
    assert done.context is not None and done.parent is not None
    assert f"{done.context.trace_id:032x}" == TRACE
    assert f"{done.context.span_id:016x}" == SPAN
    assert f"{done.parent.span_id:016x}" == CUSTOMER_SPAN
    assert done.parent.trace_id == done.context.trace_id
    assert done.parent.is_remote and done.context.trace_flags.sampled
    assert done.context.trace_state.to_header() == "vendor=1"
    assert done.name == "raw.transactions process"
    assert done.kind is SpanKind.CONSUMER
    assert (done.start_time, done.end_time) == (
        1_700_000_000_000_000_000,
        1_700_000_000_002_000_000,
    )
    assert dict(done.attributes or {}) == {
        "mesh.validation.outcome": "valid",
        "messaging.kafka.offset": 12,
    }
    assert done.status.status_code is StatusCode.OK
    assert done.resource.attributes["service.instance.id"] == INSTANCE
    assert memory.tracing.stats() == TracingStats(spans_exported=1)


def test_a_span_without_parent_is_a_root_and_ints_are_accepted(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing()
    span = span_from_ids(
        int(TRACE, 16),
        int(SPAN, 16),
        None,
        "ingest",
        start_ns=1,
        end_ns=1,
        status=Status(StatusCode.ERROR, "invalid record"),
    )
    assert memory.tracing.submit([span]) == 1
    (done,) = memory.finished()
    assert done.parent is None
    assert done.context is not None and f"{done.context.span_id:016x}" == SPAN
    assert done.status.description == "invalid record"


def test_a_detector_span_from_the_records_headers_is_a_child_of_the_ingest_span(
    memory_tracing: MakeTracing,
) -> None:
    memory = memory_tracing(sample_ratio=0.0)
    ingest = span_from_ids(
        TRACE, SPAN, None, "raw.logins process", start_ns=10, end_ns=20, resource=None
    )
    headers = [("traceparent", f"00-{TRACE}-{SPAN}-01".encode())]  # as ingest writes it
    detector = process_span(memory.tracing.tracer, "records.logins", 0, 5, "g", extract(headers))
    detector.end()
    memory.tracing.submit([ingest])
    done = {s.name: s for s in memory.finished()}
    child = done["records.logins process"]
    assert child.parent is not None
    assert child.parent.span_id == int(SPAN, 16)
    assert child.parent.trace_id == int(TRACE, 16)


@pytest.mark.parametrize(
    ("trace_id", "span_id", "parent"),
    [
        (TRACE.upper(), SPAN, None),
        (TRACE[:-1], SPAN, None),
        ("0" * 32, SPAN, None),
        (TRACE, "0" * 16, None),
        (TRACE, SPAN, "xyz"),
        (0, SPAN, None),
        (TRACE, 1 << 64, None),
    ],
)
def test_bad_ids_are_refused(trace_id: str | int, span_id: str | int, parent: str | None) -> None:
    with pytest.raises(ValueError, match="_id must be"):
        span_from_ids(trace_id, span_id, parent, "x", start_ns=1, end_ns=2)


def test_an_end_before_the_start_is_refused() -> None:
    with pytest.raises(ValueError, match="start_ns <= end_ns"):
        span_from_ids(TRACE, SPAN, None, "x", start_ns=2, end_ns=1)


def test_submit_with_tracing_off_accepts_nothing() -> None:

    tracing = setup_tracing("ingest", INSTANCE, "1", Settings(), env={})
    span = span_from_ids(TRACE, SPAN, None, "x", start_ns=1, end_ns=2)
    assert tracing.submit([span]) == 0
    assert tracing.stats() == TracingStats()
