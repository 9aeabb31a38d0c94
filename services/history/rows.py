"""A history row: the decoded record's fields, its Kafka coordinates, and its event date.

The coordinates make each row's identity (topic, partition, offset): what the exactly-once
checks count, what a backtest orders a partition by (the order the streaming runtime saw), and
where a query started without its checkpoint resumes (:mod:`services.history.resume`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from shared.history_tables import EVENT_DATE
from shared.spark_avro import DECODED, ERROR_CLASS, ERROR_MESSAGE


def _coordinates() -> list[F.Column]:
    return [
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    ]


def history_rows(decoded: DataFrame) -> DataFrame:
    """Valid classified rows as history rows: every field of the record, then coordinates and
    ``event_date``."""
    return decoded.select(
        f"{DECODED}.*", *_coordinates(), F.to_date(F.col(f"{DECODED}.event_time")).alias(EVENT_DATE)
    )


def rejected_rows(invalid: DataFrame) -> DataFrame:
    """Messages that did not decode: coordinates, the original key and bytes, the reason, and
    the date they were read (the partition column of ``_rejected``)."""
    return invalid.select(
        *_coordinates(),
        F.col("key"),
        F.col("value"),
        F.col(ERROR_CLASS).alias("error_class"),
        F.col(ERROR_MESSAGE).alias("error_message"),
        F.to_date(F.col("timestamp")).alias(EVENT_DATE),
    )
