"""Ingest's metrics: a streaming query listener in the driver feeds the instance's registry.

The executors do the work, but every micro-batch ends with a progress event in the driver; its
numbers (rows read, batch duration, rows behind the end of the raw topics, state rows) and the
routing query's observed valid/invalid counts are all the metrics ingest needs, at no cost per
record. The registry is reported like any other instance's (shared.metrics), service ``ingest``,
tag ``query`` per streaming query:

| name | type | what |
|---|---|---|
| `ingest.rows.in` | meter | raw records read by the query |
| `ingest.records.valid` / `ingest.records.invalid` | counter | routing outcome (routing query) |
| `ingest.batch.duration` | timer | micro-batch wall time, ms |
| `consumer.lag` | gauge | Kafka offsets behind the end of the raw topics, largest partition |
| `state.size` | gauge | rows in the query's state stores (window counts) |
| `process.cpu_seconds` / `process.rss_bytes` | gauge | the driver process |
| `tracing.spans.exported` / `tracing.spans.dropped` | gauge | spans of `ingest-traces` (no tag) |

The two tracing gauges exist with tracing on only; :func:`services.ingest.job.main` registers
them on the driver's tracing handle, which exports the ``ingest-traces`` query's spans.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

from shared.metrics import MetricRegistry

log = logging.getLogger(__name__)

#: Name of the observation the routing query carries (see :func:`observe_outcomes`).
OUTCOMES = "ingest_outcomes"


def observe_outcomes(classified: DataFrame, error: Column) -> DataFrame:
    """``classified`` with per-batch valid/invalid counts attached (reported in progress events)."""
    invalid = F.sum(F.when(error.isNotNull(), 1).otherwise(0)).alias("invalid")
    return classified.observe(OUTCOMES, F.count(F.lit(1)).alias("rows"), invalid)


class IngestMetricsListener(StreamingQueryListener):
    """Turns each query's progress events into the registry's metrics."""

    def __init__(self, registry: MetricRegistry) -> None:
        self.registry = registry
        self._lag: dict[str, float] = {}
        self._state_rows: dict[str, float] = {}

    def onQueryStarted(self, event: Any) -> None:
        name = event.name or str(event.id)
        tags = {"query": name}
        self.registry.gauge("consumer.lag", lambda: self._lag.get(name), tags=tags)
        self.registry.gauge("state.size", lambda: self._state_rows.get(name), tags=tags)

    def onQueryProgress(self, event: Any) -> None:
        try:
            self._record(event.progress)
        except Exception:  # a metrics hiccup must never disturb the query
            log.exception("could not record ingest progress")

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass

    def _record(self, progress: Any) -> None:
        name = progress.name or str(progress.id)
        tags = {"query": name}
        registry = self.registry
        registry.meter("ingest.rows.in", tags=tags).mark(int(progress.numInputRows))
        registry.timer("ingest.batch.duration", tags=tags).update_ms(float(progress.batchDuration))
        behind = [_behind(source.metrics) for source in progress.sources]
        known = [b for b in behind if b is not None]
        if known:
            self._lag[name] = max(known)
        self._state_rows[name] = float(sum(op.numRowsTotal for op in progress.stateOperators))
        outcome = progress.observedMetrics.get(OUTCOMES)
        if outcome is not None:
            invalid = int(outcome["invalid"] or 0)
            registry.counter("ingest.records.valid", tags=tags).inc(int(outcome["rows"]) - invalid)
            registry.counter("ingest.records.invalid", tags=tags).inc(invalid)


def _behind(metrics: Any) -> float | None:
    """The Kafka source's ``maxOffsetsBehindLatest`` (a string in progress events), if present."""
    try:
        return float(metrics["maxOffsetsBehindLatest"])
    except (KeyError, TypeError, ValueError):
        return None
