"""Decoded MetricSnapshot rows -> the flat columns the per-series step reads (in the JVM).

``series_input`` flattens valid rows into the series key (service, name, tags as canonical JSON:
sorted ``[{"key": k, "value": v}, ...]``), the instance's figures and the Kafka position;
``snapshot_columns`` does the same for every classified row and keeps ``error_class``, so one
collect of a batch tells the snapshots from the dead letters without shipping message bytes.
The rows then go to :class:`series_table.SeriesTable` in the driver.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from services.metrics_aggregator.decode import DECODED, ERROR_CLASS
from services.metrics_aggregator.snapshots import FLOAT_FIELDS


def _columns() -> list[Column]:
    """A null count becomes 0 with ``has_count`` false, so the column stays a 64-bit integer."""
    s = F.col(DECODED)
    return [
        s["service"].alias("service"),
        s["name"].alias("name"),
        F.to_json(F.array_sort(F.map_entries(s["tags"]))).alias("tags"),
        s["instance_id"].alias("instance_id"),
        s["type"].cast("string").alias("type"),
        F.unix_millis(s["timestamp"]).alias("timestamp"),
        F.coalesce(s["count"], F.lit(0).cast("long")).alias("count"),
        s["count"].isNotNull().alias("has_count"),
        *[s[name].alias(name) for name in FLOAT_FIELDS],
        F.col("partition"),
        F.col("offset"),
    ]


def series_input(valid: DataFrame) -> DataFrame:
    """Valid decoded snapshots -> key columns + instance_id, type, timestamp (ms), figures,
    position."""
    return valid.select(*_columns())


def snapshot_columns(classified: DataFrame) -> DataFrame:
    """Every classified row: ``error_class`` (null for a snapshot) and the columns of
    :func:`series_input` (null where the message did not decode)."""
    return classified.select(F.col(ERROR_CLASS), *_columns())
