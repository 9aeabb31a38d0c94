"""setup_tracing: the no-op path without an endpoint, the resource, the parent-based sampler."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from tracing_memory import INSTANCE, MemoryTracing

from shared.settings import PROJECT_ROOT, Settings
from shared.tracing import TracingStats, setup_tracing, tracer_for

MakeTracing = Callable[..., MemoryTracing]


def remote_parent(sampled: bool) -> Context:
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    parent = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True, flags)
    return trace.set_span_in_context(NonRecordingSpan(parent))


def test_without_an_endpoint_the_tracer_is_the_apis_no_op_and_nothing_is_created() -> None:
    global_provider = trace.get_tracer_provider()
    tracing = setup_tracing("ingest", INSTANCE, "1.0", Settings(), env={})
    assert not tracing.enabled
    assert type(tracing.tracer) is trace.NoOpTracer
    assert tracing.provider is None and tracing.resource is None
    span = tracing.tracer.start_span("x")
    assert not span.is_recording()
    span.end()
    assert tracing.stats() == TracingStats()
    assert tracing.submit([]) == 0
    assert tracing.flush() and tracing.shutdown()
    assert type(tracer_for("ingest", INSTANCE, "1.0", Settings())) is trace.NoOpTracer
    assert trace.get_tracer_provider() is global_provider


def test_the_no_op_path_imports_neither_the_sdk_nor_the_exporter() -> None:
    code = (
        "import sys\n"
        "from shared.settings import Settings\n"
        "from shared.tracing import extract, is_sampled, process_span, setup_tracing\n"
        "t = setup_tracing('ingest', 'i', '1', Settings(), env={})\n"
        "span = process_span(t.tracer, 'raw.x', 0, 1, 'g', extract(None))\n"
        "span.end(); t.stats(); t.shutdown()\n"
        "loaded = [m for m in sys.modules if m.startswith(('opentelemetry.sdk', "
        "'opentelemetry.exporter', 'google.protobuf', 'requests'))]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True, timeout=60)


def test_the_resource_names_service_instance_and_version(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing()
    with memory.tracing.tracer.start_as_current_span("work"):
        pass
    (span,) = memory.finished()
    attributes = span.resource.attributes
    assert attributes["service.name"] == "detector.velocity"
    assert attributes["service.instance.id"] == INSTANCE
    assert attributes["service.version"] == "1.2.3"
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "detector-mesh"


def test_the_global_tracer_provider_is_never_touched(memory_tracing: MakeTracing) -> None:
    before = trace.get_tracer_provider()
    memory_tracing()
    assert trace.get_tracer_provider() is before


def test_ratio_zero_records_no_new_trace(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing(sample_ratio=0.0)
    for _ in range(200):
        span = memory.tracing.tracer.start_span("root", Context())
        assert not span.is_recording()
        span.end()
    assert memory.finished() == []
    assert memory.tracing.stats() == TracingStats()


def test_ratio_one_records_every_new_trace(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing(sample_ratio=1.0)
    for _ in range(20):
        memory.tracing.tracer.start_span("root", Context()).end()
    assert len(memory.finished()) == 20


def test_a_sampled_parent_is_honoured_even_at_ratio_zero(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing(sample_ratio=0.0)
    span = memory.tracing.tracer.start_span("child", remote_parent(sampled=True))
    assert span.is_recording()
    span.end()
    (exported,) = memory.finished()
    assert exported.context is not None and exported.parent is not None
    assert exported.context.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert exported.parent.span_id == 0x00F067AA0BA902B7
    assert memory.tracing.stats().spans_exported == 1


def test_an_unsampled_parent_is_not_recorded_even_at_ratio_one(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing(sample_ratio=1.0)
    span = memory.tracing.tracer.start_span("child", remote_parent(sampled=False))
    assert not span.is_recording()
    assert span.get_span_context().trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    span.end()
    assert memory.finished() == []


@pytest.mark.parametrize("ratio", [0.25])
def test_a_fraction_of_new_traces_is_recorded(memory_tracing: MakeTracing, ratio: float) -> None:
    memory = memory_tracing(sample_ratio=ratio)
    recorded = 0
    for _ in range(4000):
        span = memory.tracing.tracer.start_span("root", Context())
        recorded += span.is_recording()
        span.end()
    assert 0.20 < recorded / 4000 < 0.30


def test_shutdown_is_idempotent_and_later_spans_are_counted_as_dropped(
    memory_tracing: MakeTracing,
) -> None:
    memory = memory_tracing()
    memory.tracing.tracer.start_span("before").end()
    assert memory.tracing.shutdown(timeout_s=5)
    assert memory.tracing.shutdown(timeout_s=5)
    memory.tracing.tracer.start_span("after").end()
    assert [s.name for s in memory.exporter.get_finished_spans()] == ["before"]
    assert memory.tracing.stats() == TracingStats(spans_exported=1, spans_dropped=1)
