"""TracingStats: what became of a service instance's sampled spans (for its metrics).

Kept apart from :mod:`shared.tracing.export` so that reading the (all-zero) stats of a service
with tracing off does not import the OpenTelemetry SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.metrics import MetricRegistry


@dataclass(frozen=True)
class TracingStats:
    """What became of the sampled spans of one service instance so far."""

    #: Spans the backend accepted.
    spans_exported: int = 0
    #: Spans that will never reach the backend: the queue was full, their export failed, or they
    #: were still queued when tracing shut down.
    spans_dropped: int = 0
    #: Export calls (batches of spans) that failed.
    export_failures: int = 0
    #: Spans waiting for export right now.
    spans_queued: int = 0


def add_tracing_gauges(registry: MetricRegistry, stats: Callable[[], TracingStats]) -> None:
    """Report ``tracing.spans.exported`` and ``tracing.spans.dropped`` (since the instance
    started) in ``registry``: a trace backend that is down shows as dropped spans."""
    registry.gauge("tracing.spans.exported", lambda: stats().spans_exported)
    registry.gauge("tracing.spans.dropped", lambda: stats().spans_dropped)
