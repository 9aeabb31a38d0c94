"""Snapshots -> per-series totals and per-instance rows: the stateful part, as two transforms.

``series_input`` flattens decoded MetricSnapshot rows into the columns the step reads, with the
series key (service, name, tags as canonical JSON: sorted ``[{"key": k, "value": v}, ...]``).
``series_updates`` groups by that key and runs :class:`stateful.SeriesUpdater` with
``applyInPandasWithState`` (update mode, processing-time timeout): one state per series.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from services.metrics_aggregator.decode import DECODED
from services.metrics_aggregator.series_step import KEY_COLUMNS
from services.metrics_aggregator.snapshots import FLOAT_FIELDS
from services.metrics_aggregator.stateful import OUTPUT_SCHEMA, STATE_SCHEMA, SeriesUpdater


def series_input(valid: DataFrame) -> DataFrame:
    """Decoded snapshots -> key columns + instance_id, type, timestamp (ms), figures, position.

    A null count becomes 0 with ``has_count`` false: pandas would otherwise turn the column into
    floats and lose exactness above 2**53.
    """
    s = F.col(DECODED)
    return valid.select(
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
    )


def series_updates(inputs: DataFrame, updater: SeriesUpdater) -> DataFrame:
    """Rows of :data:`series_step.ROW_COLUMNS`: totals and instance rows of updated series."""
    return inputs.groupBy(*KEY_COLUMNS).applyInPandasWithState(
        updater,
        OUTPUT_SCHEMA,
        STATE_SCHEMA,
        "update",
        GroupStateTimeout.ProcessingTimeTimeout,
    )
