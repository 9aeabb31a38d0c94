"""A service's tracing counts reach its metrics as two gauges."""

from __future__ import annotations

from shared.metrics import MetricRegistry
from shared.tracing.stats import TracingStats, add_tracing_gauges


def test_the_gauges_read_the_stats_at_snapshot_time() -> None:
    registry = MetricRegistry(service="ingest", instance_id="ingest@h:1:2")
    current = [TracingStats()]
    add_tracing_gauges(registry, lambda: current[0])
    current[0] = TracingStats(spans_exported=41, spans_dropped=3)
    values = {record["name"]: record["value"] for _, record in registry.snapshot_items(now_ms=1)}
    assert values["tracing.spans.exported"] == 41
    assert values["tracing.spans.dropped"] == 3
