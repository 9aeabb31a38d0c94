"""The process gauges every service instance reports: CPU seconds and resident memory.

Read through :func:`shared.process_usage.process_usage`, the same /proc accounting `mesh status`
charges each instance with, so the two never disagree about what a process costs.
"""

from __future__ import annotations

import os

from shared.metrics.gauge import Gauge
from shared.metrics.registry import MetricRegistry
from shared.process_usage import process_usage


def cpu_seconds() -> float | None:
    """User + system CPU seconds of this process (None if /proc cannot be read)."""
    usage = process_usage(os.getpid())
    return None if usage is None else usage.cpu_s


def rss_bytes() -> int | None:
    """Resident memory of this process, bytes (None if /proc cannot be read)."""
    usage = process_usage(os.getpid())
    return None if usage is None else usage.rss_bytes


def add_process_gauges(registry: MetricRegistry) -> tuple[Gauge, Gauge]:
    """Register ``process.cpu_seconds`` and ``process.rss_bytes`` in ``registry``."""
    return (
        registry.gauge("process.cpu_seconds", cpu_seconds),
        registry.gauge("process.rss_bytes", rss_bytes),
    )
