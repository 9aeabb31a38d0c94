"""A metric at one moment as a ``MetricSnapshot`` v1 record (schemas/metric_snapshot/v1.avsc).

One dict per metric, with exactly the schema's fields; those that do not apply to the metric's
type are None. A histogram or timer with no sample yet reports its count and no statistics
(None, not Dropwizard's zeros), so the aggregator's "min of the mins" is not dragged to 0 by an
instance that has seen nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.metrics.counter import Counter
from shared.metrics.gauge import Gauge
from shared.metrics.histogram import Histogram, HistogramSnapshot
from shared.metrics.meter import Meter, MeterRates
from shared.metrics.timer import DURATION_UNIT, Timer

#: Every metric type, as the schema's ``MetricType`` enum spells it.
TYPES = frozenset({"COUNTER", "METER", "HISTOGRAM", "TIMER", "GAUGE"})
#: The schema's fields, in order.
FIELDS = (
    "instance_id",
    "service",
    "name",
    "type",
    "tags",
    "timestamp",
    "count",
    "m1_rate",
    "m5_rate",
    "m15_rate",
    "mean_rate",
    "min",
    "max",
    "mean",
    "stddev",
    "p50",
    "p75",
    "p95",
    "p98",
    "p99",
    "p999",
    "value",
    "duration_unit",
    "rate_unit",
)
#: Unit of every rate.
RATE_UNIT = "events/s"

Metric = Counter | Meter | Histogram | Timer | Gauge
Snapshot = dict[str, Any]

_VALUES = dict.fromkeys(FIELDS[6:])


def snapshot(
    metric: Metric,
    *,
    instance_id: str,
    service: str,
    name: str,
    tags: Mapping[str, str],
    timestamp_ms: int,
) -> Snapshot | None:
    """The record for ``metric`` now; None for a gauge without a value (it is skipped)."""
    record: Snapshot = {
        "instance_id": instance_id,
        "service": service,
        "name": name,
        "type": metric.TYPE,
        "tags": dict(tags),
        "timestamp": timestamp_ms,
        **_VALUES,
    }
    if isinstance(metric, Counter):
        record["count"] = metric.count
    elif isinstance(metric, Meter):
        _put_rates(record, metric.rates())
    elif isinstance(metric, Histogram):
        _put_statistics(record, metric.snapshot())
        record["count"] = metric.count
    elif isinstance(metric, Timer):
        _put_rates(record, metric.rates())
        _put_statistics(record, metric.snapshot())
        record["duration_unit"] = DURATION_UNIT
    else:
        value = metric.read()
        if value is None:
            return None
        record["value"] = value
    return record


def _put_rates(record: Snapshot, rates: MeterRates) -> None:
    record["count"] = rates.count
    record["m1_rate"] = rates.m1_rate
    record["m5_rate"] = rates.m5_rate
    record["m15_rate"] = rates.m15_rate
    record["mean_rate"] = rates.mean_rate
    record["rate_unit"] = RATE_UNIT


def _put_statistics(record: Snapshot, stats: HistogramSnapshot) -> None:
    if not stats.samples:
        return
    record["min"] = float(stats.min)
    record["max"] = float(stats.max)
    record["mean"] = float(stats.mean)
    record["stddev"] = float(stats.stddev)
    record["p50"] = float(stats.p50)
    record["p75"] = float(stats.p75)
    record["p95"] = float(stats.p95)
    record["p98"] = float(stats.p98)
    record["p99"] = float(stats.p99)
    record["p999"] = float(stats.p999)
