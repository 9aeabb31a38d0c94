"""Export never blocks the caller and everything is counted: exported, dropped, failed batches."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracing_memory import INSTANCE, MemoryTracing

from shared.tracing import Tracing, TracingConfig, TracingStats, setup_tracing
from shared.tracing.export import CountingSpanExporter

MakeTracing = Callable[..., MemoryTracing]


class FailingExporter(SpanExporter):
    """Refuses every batch, or raises when ``raises`` is set."""

    def __init__(self, raises: bool = False) -> None:
        self.raises = raises
        self.batches = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.batches += 1
        if self.raises:
            raise ConnectionError("backend down")
        return SpanExportResult.FAILURE


class StuckExporter(SpanExporter):
    """Blocks in export until ``release`` is set (a backend that hangs), then succeeds."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(30)
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def spans(memory: MemoryTracing, count: int) -> list[ReadableSpan]:
    for i in range(count):
        memory.tracing.tracer.start_span(f"s{i}").end()
    return memory.finished()


def tracing_with(exporter: SpanExporter, **config: Any) -> Tracing:
    """Tracing into ``exporter``; batches leave only when full (a minute's delay otherwise)."""
    config.setdefault("schedule_delay_s", 60.0)
    return setup_tracing(
        "detector.velocity",
        INSTANCE,
        "1",
        config=TracingConfig(sample_ratio=1.0, **config),
        exporter=exporter,
    )


def test_the_wrapper_counts_exported_spans(memory_tracing: MakeTracing) -> None:
    batch = spans(memory_tracing(), 3)
    inner = InMemorySpanExporter()
    counting = CountingSpanExporter(inner)
    assert counting.export(batch) is SpanExportResult.SUCCESS
    assert counting.export(batch[:1]) is SpanExportResult.SUCCESS
    assert (counting.spans_exported, counting.spans_failed, counting.failed_batches) == (4, 0, 0)
    assert len(inner.get_finished_spans()) == 4


@pytest.mark.parametrize("raises", [False, True])
def test_the_wrapper_counts_failed_batches_and_warns_once_per_outage(
    memory_tracing: MakeTracing, caplog: pytest.LogCaptureFixture, raises: bool
) -> None:
    batch = spans(memory_tracing(), 2)
    failing = FailingExporter(raises=raises)
    counting = CountingSpanExporter(failing)
    with caplog.at_level(logging.INFO, logger="shared.tracing.export"):
        for _ in range(3):
            assert counting.export(batch) is SpanExportResult.FAILURE
        failing.export = lambda spans: SpanExportResult.SUCCESS  # type: ignore[method-assign]
        assert counting.export(batch) is SpanExportResult.SUCCESS
    assert (counting.spans_exported, counting.spans_failed, counting.failed_batches) == (2, 6, 3)
    levels = [r.levelno for r in caplog.records if r.name == "shared.tracing.export"]
    assert levels == [logging.WARNING, logging.INFO]


def test_after_shutdown_the_wrapper_fails_without_calling_the_backend(
    memory_tracing: MakeTracing,
) -> None:
    batch = spans(memory_tracing(), 1)
    failing = FailingExporter()
    counting = CountingSpanExporter(failing)
    counting.shutdown()
    counting.shutdown()
    assert counting.export(batch) is SpanExportResult.FAILURE
    assert failing.batches == 0 and counting.failed_batches == 1


def test_a_failing_backend_drops_and_counts_every_span() -> None:
    tracing = tracing_with(FailingExporter(raises=True), max_export_batch_size=10)
    for i in range(25):
        tracing.tracer.start_span(f"s{i}").end()
    assert tracing.shutdown(timeout_s=5)
    assert tracing.stats() == TracingStats(spans_dropped=25, export_failures=3)


def test_a_hanging_backend_never_blocks_the_caller_and_a_full_queue_drops() -> None:
    stuck = StuckExporter()
    tracing = tracing_with(stuck, queue_size=100, max_export_batch_size=50)
    try:
        for i in range(50):
            tracing.tracer.start_span(f"s{i}").end()
        assert stuck.entered.wait(10), "the first batch was not exported"
        started = time.perf_counter()
        for i in range(1000):
            tracing.tracer.start_span(f"t{i}").end()
        elapsed = time.perf_counter() - started
        assert elapsed < 0.5, f"ending 1000 spans took {elapsed:.3f} s with the backend hanging"
        stats = tracing.stats()
        assert stats.spans_queued == 100
        assert stats.spans_dropped == 900
        stuck.release.set()
        assert tracing.flush(timeout_s=10)
        assert tracing.stats() == TracingStats(spans_exported=150, spans_dropped=900)
        assert stuck.spans == 150
    finally:
        stuck.release.set()
        tracing.shutdown(timeout_s=5)


def test_shutdown_waits_no_longer_than_its_timeout_and_counts_what_was_left() -> None:
    stuck = StuckExporter()
    stuck.shutdown = lambda: None  # type: ignore[method-assign]  # ignores shutdown too
    tracing = tracing_with(stuck, max_export_batch_size=10)
    try:
        for i in range(30):
            tracing.tracer.start_span(f"s{i}").end()
        assert stuck.entered.wait(10)
        started = time.monotonic()
        assert not tracing.shutdown(timeout_s=0.3)
        assert time.monotonic() - started < 2.0
        assert not tracing.flush(timeout_s=0.1)  # closed: nothing to flush into
        stats = tracing.stats()
        assert stats.spans_queued == 0
        assert stats.spans_dropped == 20  # the 10 in the hanging export are not counted yet
    finally:
        stuck.release.set()


def test_unsampled_spans_are_neither_queued_nor_counted(memory_tracing: MakeTracing) -> None:
    memory = memory_tracing(sample_ratio=0.0)
    for _ in range(10):
        memory.tracing.tracer.start_span("root").end()
    assert memory.finished() == []
    assert memory.tracing.stats() == TracingStats()
