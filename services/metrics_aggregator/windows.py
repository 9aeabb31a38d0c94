"""Ingest's window counts (metrics.windows) -> the latest count per window and outcome.

The topic is compacted and a window's count is rewritten as it grows, so one micro-batch may
hold several values of one key; the one written last (highest offset, the key's partition being
fixed) is what counts.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from services.metrics_aggregator.decode import DECODED


def window_counts(valid: DataFrame) -> DataFrame:
    """Columns source_topic, window_start (epoch ms), status (VALID/INVALID/LATE), count."""
    w = F.col(DECODED)
    flat = valid.select(
        w["source_topic"].alias("source_topic"),
        F.unix_millis(w["window_start"]).alias("window_start"),
        w["status"].cast("string").alias("status"),
        w["count"].alias("count"),
        F.struct(F.col("partition"), F.col("offset")).alias("position"),
    )
    return flat.groupBy("source_topic", "window_start", "status").agg(
        F.max_by("count", "position").alias("count")
    )
