"""OTLP/HTTP export against real sockets on 127.0.0.1: what a collector receives, and that a
backend that refuses or never answers does not slow the service down.

The receiver is a small ``http.server`` that decodes each POST with the OTLP protobuf classes,
as a collector (or Jaeger v2) would. No Kafka is involved.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.trace import SpanKind
from polling import wait_for

from shared.settings import Settings
from shared.tracing import (
    Tracing,
    extract,
    process_span,
    publish_headers,
    publish_span,
    setup_tracing,
)
from shared.tracing.spans_from_ids import span_from_ids

INSTANCE = "detector-velocity-r1-0@host:42:1700000000000"
TRACE = "0af7651916cd43dd8448eb211c80319c"
INGEST_SPAN = "b7ad6b7169203331"


@dataclass
class Received:
    """One OTLP request as the receiver saw it."""

    path: str
    content_type: str
    request: ExportTraceServiceRequest


@dataclass
class OtlpReceiver:
    url: str
    requests: list[Received] = field(default_factory=list)

    def spans(self) -> list[tuple[dict[str, object], ProtoSpan]]:
        """Every received span with its resource's attributes."""
        found: list[tuple[dict[str, object], ProtoSpan]] = []
        for received in list(self.requests):
            for resource_spans in received.request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    found.extend((resource, span) for span in scope_spans.spans)
        return found


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """An OTLP/HTTP protobuf trace receiver on 127.0.0.1 (any free port)."""
    received: list[Received] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received.append(Received(self.path, self.headers.get("Content-Type", ""), request))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield OtlpReceiver(f"http://127.0.0.1:{server.server_address[1]}", received)
    finally:
        server.shutdown()
        server.server_close()


def tracing_for(endpoint: str, **env: str) -> Tracing:
    env = {"MESH_OTLP_ENDPOINT": endpoint, "MESH_TRACE_SAMPLE_RATIO": "1", **env}
    return setup_tracing("detector.velocity", INSTANCE, "1.2.3", Settings.from_env(env), env=env)


def test_spans_arrive_as_otlp_protobuf_with_ids_parents_and_resource(
    otlp_receiver: OtlpReceiver,
) -> None:
    tracing = tracing_for(otlp_receiver.url, MESH_TRACE_SAMPLE_RATIO="0")
    assert tracing.enabled
    ingest = span_from_ids(
        TRACE,
        INGEST_SPAN,
        None,
        "raw.transactions process",
        kind=SpanKind.CONSUMER,
        start_ns=time.time_ns() - 2_000_000,
        end_ns=time.time_ns() - 1_000_000,
        attributes={"mesh.validation.outcome": "valid"},
        resource=tracing.resource,
    )
    assert tracing.submit([ingest]) == 1
    headers = [("traceparent", f"00-{TRACE}-{INGEST_SPAN}-01".encode())]
    process = process_span(
        tracing.tracer, "records.transactions", 2, 40, "detector.velocity", extract(headers)
    )
    publish = publish_span(tracing.tracer, "alerts", process)
    alert_headers = publish_headers(publish)
    publish.end()
    process.end()
    assert tracing.shutdown(timeout_s=10)
    assert tracing.stats().spans_exported == 3

    assert {r.path for r in otlp_receiver.requests} == {"/v1/traces"}
    assert {r.content_type for r in otlp_receiver.requests} == {"application/x-protobuf"}
    received = otlp_receiver.spans()
    spans = {span.name: span for _, span in received}
    assert set(spans) == {
        "raw.transactions process",
        "records.transactions process",
        "alerts publish",
    }
    for resource, _ in received:
        assert resource["service.name"] == "detector.velocity"
        assert resource["service.instance.id"] == INSTANCE
        assert resource["service.version"] == "1.2.3"
    root, child, grandchild = (
        spans["raw.transactions process"],
        spans["records.transactions process"],
        spans["alerts publish"],
    )
    assert {s.trace_id.hex() for s in spans.values()} == {TRACE}
    assert root.span_id.hex() == INGEST_SPAN and root.parent_span_id == b""
    assert child.parent_span_id == root.span_id
    assert grandchild.parent_span_id == child.span_id
    assert (root.kind, child.kind, grandchild.kind) == (
        ProtoSpan.SPAN_KIND_CONSUMER,
        ProtoSpan.SPAN_KIND_CONSUMER,
        ProtoSpan.SPAN_KIND_PRODUCER,
    )
    attributes = {a.key: a.value for a in child.attributes}
    assert attributes["messaging.system"].string_value == "kafka"
    assert attributes["messaging.destination.name"].string_value == "records.transactions"
    assert attributes["messaging.destination.partition.id"].string_value == "2"
    assert attributes["messaging.kafka.offset"].int_value == 40
    assert attributes["messaging.consumer.group.name"].string_value == "detector.velocity"
    assert alert_headers == [
        ("traceparent", f"00-{TRACE}-{grandchild.span_id.hex()}-01".encode()),
    ]


def test_an_endpoint_that_already_names_the_traces_path_is_used_as_it_is(
    otlp_receiver: OtlpReceiver,
) -> None:
    tracing = tracing_for(otlp_receiver.url + "/v1/traces", MESH_TRACE_SCHEDULE_DELAY_S="0.1")
    tracing.tracer.start_span("one").end()
    wait_for(lambda: otlp_receiver.requests, timeout=10, what="the span to arrive")
    assert [r.path for r in otlp_receiver.requests] == ["/v1/traces"]
    assert tracing.shutdown(timeout_s=5)


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def end_spans(tracing: Tracing, count: int) -> float:
    """End ``count`` sampled spans; the caller's elapsed time, seconds."""
    started = time.perf_counter()
    for i in range(count):
        with tracing.tracer.start_as_current_span(f"record {i}"):
            pass
    return time.perf_counter() - started


def test_a_backend_that_refuses_connections_costs_the_caller_nothing_and_drops_are_counted() -> (
    None
):
    tracing = tracing_for(f"http://127.0.0.1:{closed_port()}")  # default bounds: 2 s per export
    elapsed = end_spans(tracing, 1000)
    assert elapsed < 0.5, f"ending 1000 spans took {elapsed:.3f} s with the backend down"
    started = time.monotonic()
    assert tracing.shutdown(timeout_s=10)
    assert time.monotonic() - started < 8
    stats = tracing.stats()
    assert stats.spans_exported == 0 and stats.spans_queued == 0
    assert stats.spans_dropped == 1000
    assert stats.export_failures >= 2  # batches of at most 512


def test_a_full_queue_drops_new_spans_at_once() -> None:
    tracing = tracing_for(
        f"http://127.0.0.1:{closed_port()}",
        MESH_TRACE_QUEUE_SIZE="100",
        MESH_TRACE_EXPORT_TIMEOUT_S="0.5",
    )
    elapsed = end_spans(tracing, 1000)
    assert elapsed < 0.5
    # Not yet counted: at most a full queue and the one batch being exported.
    assert tracing.stats().spans_dropped >= 800
    assert tracing.shutdown(timeout_s=10)
    assert tracing.stats().spans_dropped == 1000


def test_a_backend_that_never_answers_is_given_up_after_the_export_timeout() -> None:
    with socket.socket() as silent:  # accepts connections (kernel backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        port = silent.getsockname()[1]
        tracing = tracing_for(f"http://127.0.0.1:{port}", MESH_TRACE_EXPORT_TIMEOUT_S="0.5")
        elapsed = end_spans(tracing, 1000)
        assert elapsed < 0.5, f"ending 1000 spans took {elapsed:.3f} s with the backend silent"
        started = time.monotonic()
        assert tracing.shutdown(timeout_s=10)
        assert time.monotonic() - started < 5  # two batches, each given up after ~0.5 s
    stats = tracing.stats()
    assert stats.spans_exported == 0
    assert stats.spans_dropped == 1000
    assert stats.export_failures >= 2
