"""Tracing that exports into memory, for the tracing unit tests (imported by name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from shared.tracing import Tracing, TracingConfig, setup_tracing

INSTANCE = "detector-velocity-r1-0@host:42:1700000000000"


@dataclass
class MemoryTracing:
    """A Tracing handle whose spans land in ``exporter``; ``finished()`` flushes and lists them."""

    tracing: Tracing
    exporter: InMemorySpanExporter

    def finished(self) -> list[ReadableSpan]:
        assert self.tracing.flush(timeout_s=10)
        return list(self.exporter.get_finished_spans())


def memory_tracing(sample_ratio: float = 1.0, **config: Any) -> MemoryTracing:
    """Service detector.velocity, version 1.2.3, exporting into an InMemorySpanExporter."""
    exporter = InMemorySpanExporter()
    tracing = setup_tracing(
        "detector.velocity",
        INSTANCE,
        "1.2.3",
        config=TracingConfig(sample_ratio=sample_ratio, **config),
        exporter=exporter,
    )
    return MemoryTracing(tracing, exporter)
