"""The aggregator reports on itself like every other instance (service ``metrics_aggregator``).

Its work is counted in :class:`~services.metrics_aggregator.status.Counters` by two driver
threads; :meth:`AggregatorMetrics.sync`, called from the main loop, moves what they added into
the registry's counters (one writer per metric, as shared.metrics wants). InfluxDB's health is a
gauge, so a dashboard (or the aggregate itself, once InfluxDB is back) shows the outage.

| name | type | what |
|---|---|---|
| `aggregator.snapshots.in` | counter | metric snapshots decoded |
| `aggregator.dead_letters` | counter | malformed snapshots sent to `metrics.dlq` |
| `aggregator.window_counts.in` | counter | ingest window counts read |
| `aggregator.points` | counter | points written (files, and InfluxDB when configured) |
| `aggregator.batches` | counter | micro-batches of the two queries |
| `influx.points.buffered` | gauge | points waiting for InfluxDB |
| `influx.points.dropped` | gauge | points given up (buffer full) since start |
| `influx.healthy` | gauge | 1 when the last InfluxDB write succeeded, else 0 |
| `process.cpu_seconds` / `process.rss_bytes` | gauge | the driver process |
"""

from __future__ import annotations

from services.metrics_aggregator.service import AggregatorService
from shared.metrics import MetricRegistry, MetricsReporter, add_process_gauges
from shared.settings import Settings

#: status.Counters field -> counter name
COUNTED = {
    "snapshots_in": "aggregator.snapshots.in",
    "dead_letters": "aggregator.dead_letters",
    "window_counts_in": "aggregator.window_counts.in",
    "batches": "aggregator.batches",
}
POINTS = ("series_points", "window_points")


class AggregatorMetrics:
    """The aggregator's registry and reporter; ``sync()`` from the main loop, ``close()`` last."""

    def __init__(self, service: AggregatorService, settings: Settings) -> None:
        self.service = service
        registry = MetricRegistry(service="metrics_aggregator", instance_id=service.instance_id)
        self.registry = registry
        self._counters = {field: registry.counter(name) for field, name in COUNTED.items()}
        self._points = registry.counter("aggregator.points")
        registry.gauge("influx.points.buffered", lambda: self._influx("buffered"))
        registry.gauge("influx.points.dropped", lambda: self._influx("dropped"))
        registry.gauge("influx.healthy", lambda: self._influx("healthy"))
        add_process_gauges(registry)
        self.reporter = MetricsReporter.for_settings(registry, settings)

    def start(self) -> None:
        self.reporter.start()

    def sync(self) -> None:
        """Bring the registry's counters up to the service's (they only grow)."""
        now = self.service.counters.snapshot()
        for field, counter in self._counters.items():
            counter.inc(max(0, now[field] - counter.count))
        self._points.inc(max(0, sum(now[f] for f in POINTS) - self._points.count))

    def close(self) -> None:
        self.sync()
        self.reporter.close()

    def _influx(self, field: str) -> float | None:
        writer = self.service.influx_writer()
        if writer is None:
            return None
        return float(getattr(writer.stats(), field))
