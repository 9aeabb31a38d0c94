"""The aggregator's decoding: shared.spark_avro's, and a snapshot must have a key.

A metric snapshot without a key could never be replaced by compaction, so it is a dead letter
too (``require_key``, the ``metrics`` topic's rule).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from services.metrics_aggregator import errors
from shared.avro.catalogue import Catalogue
from shared.spark_avro import DECODED, ERROR_CLASS, ERROR_MESSAGE, invalid, valid
from shared.spark_avro import classify as classify_avro

__all__ = ["DECODED", "ERROR_CLASS", "ERROR_MESSAGE", "classify", "invalid", "valid"]


def classify(
    raw: DataFrame, catalogue: Catalogue, name: str, *, require_key: bool = False
) -> DataFrame:
    """``raw`` Kafka rows plus decoded and error (:func:`shared.spark_avro.classify`)."""
    missing_key = (
        F.col("key").isNull(),
        errors.MISSING_KEY,
        F.lit("no key: metric snapshots are keyed <instance id>/<metric name>"),
    )
    return classify_avro(raw, catalogue, name, [missing_key] if require_key else None)
