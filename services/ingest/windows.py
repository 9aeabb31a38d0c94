"""Valid, invalid and late counts per 1-second event-time window per source topic.

The aggregation is Spark's own stateful ``groupBy(window)`` with a watermark: partial counts are
computed in every input partition before the shuffle, so a 99:1 valid:invalid mix never skews one
task, and no Kafka repartition or changelog topic is created (state lives in the checkpoint).

Lateness is decided per record, from its own arrival time, not from a global watermark: a valid
record whose event time is more than ``allowed_lateness_ms`` behind its Kafka timestamp is LATE
and counted in the window of its arrival. That makes the figure deterministic, so a replay after
a crash produces exactly the same counts. Invalid records have no trusted event time and are
counted in the window of their arrival.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from services.ingest.avro_columns import single_object
from services.ingest.typed_fields import value_column
from services.ingest.validation import ERROR
from shared.avro.catalogue import Catalogue

WINDOW = "1 second"


def classify_window(classified: DataFrame, allowed_lateness_ms: int) -> DataFrame:
    """Each row's status (VALID, INVALID, LATE) and the time that places it in a window."""
    valid = F.col(ERROR).isNull()
    event_ms = F.col(value_column("event_time"))
    arrival_ms = F.unix_millis(F.col("timestamp"))
    late = valid & (event_ms < arrival_ms - allowed_lateness_ms)
    status = F.when(~valid, "INVALID").when(late, "LATE").otherwise("VALID")
    placed_ms = F.when(valid & ~late, event_ms).otherwise(arrival_ms)
    return classified.select(
        F.col("topic").alias("source_topic"),
        status.alias("status"),
        F.timestamp_millis(placed_ms).alias("placed_at"),
    )


def count_windows(placed: DataFrame, watermark_delay: str) -> DataFrame:
    """Running counts per (source topic, 1 s window, status), state dropped behind the watermark."""
    return (
        placed.withWatermark("placed_at", watermark_delay)
        .groupBy("source_topic", F.window("placed_at", WINDOW).alias("window"), "status")
        .count()
    )


def window_records(counts: DataFrame, catalogue: Catalogue, topic: str) -> DataFrame:
    """Kafka rows for metrics.windows: key ``<source topic>/<window start ms>/<status>``."""
    start_ms = F.unix_millis(F.col("window.start"))
    record = F.struct(
        F.col("source_topic"),
        start_ms.alias("window_start"),
        F.unix_millis(F.col("window.end")).alias("window_end"),
        F.col("status"),
        F.col("count"),
        F.unix_millis(F.current_timestamp()).alias("updated_time"),
    )
    key = F.concat_ws("/", "source_topic", start_ms.cast("string"), F.lower("status"))
    return counts.select(
        F.lit(topic).alias("topic"),
        key.cast("binary").alias("key"),
        single_object(record, catalogue.get("window_count")).alias("value"),
    )
