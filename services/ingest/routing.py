"""Routing: every classified row becomes exactly one Kafka record, valid or dead letter.

Valid rows go to ``<records prefix>.<type>`` as the latest Avro schema of their type, keyed by
customer id. Invalid rows go to the dead-letter topic as an InvalidRecord holding the original
bytes, source coordinates and the reason, with ``mesh.error.*`` headers (Kafka Connect style) so
the reason is readable without decoding the value.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from services.ingest.avro_columns import single_object
from services.ingest.tracing import trace_headers, with_trace_context
from services.ingest.typed_fields import INGEST_TIME_MS, avro_struct, value_column
from services.ingest.validation import ERROR, RECORD_TYPE, CheckedType
from shared.avro.catalogue import Catalogue
from shared.lineage import SOURCE_HEADER, SOURCE_TIMESTAMP_HEADER


def route(
    classified: DataFrame,
    types: dict[str, CheckedType],
    catalogue: Catalogue,
    records_prefix: str,
    invalid_topic: str,
    instance_id: str,
    sample_ratio: float = 0.01,
) -> DataFrame:
    """Kafka sink rows (topic, key, value, headers) for every classified row; new traces are
    sampled at ``sample_ratio`` (see :mod:`services.ingest.tracing`)."""
    valid = F.col(ERROR).isNull()
    kind = F.col(RECORD_TYPE)
    value = F.when(~valid, single_object(_invalid_record(), catalogue.get("invalid_record")))
    for name, checked in types.items():
        encoded = single_object(avro_struct(checked.record_type), checked.record_type.schema)
        value = value.when(kind == name, encoded)
    traced = trace_headers()
    headers = F.when(valid, F.concat(traced, _source_header())).otherwise(
        F.concat(traced, _error_headers(instance_id))
    )
    return with_trace_context(classified, sample_ratio).select(
        F.when(valid, F.concat(F.lit(records_prefix + "."), kind))
        .otherwise(F.lit(invalid_topic))
        .alias("topic"),
        F.when(valid, F.col(value_column("customer_id")).cast("binary"))
        .otherwise(F.col("key"))
        .alias("key"),
        value.alias("value"),
        headers.alias("headers"),
    )


def _source_header() -> Column:
    """The lineage headers (:mod:`shared.lineage`): where a valid record came from
    (``topic:partition:offset``) and when it reached Kafka (epoch ms)."""
    coordinates = F.concat_ws(
        ":", "topic", F.col("partition").cast("string"), F.col("offset").cast("string")
    )
    arrival = F.unix_millis(F.col("timestamp")).cast("string")
    return F.array(
        F.struct(F.lit(SOURCE_HEADER).alias("key"), coordinates.cast("binary").alias("value")),
        F.struct(
            F.lit(SOURCE_TIMESTAMP_HEADER).alias("key"), arrival.cast("binary").alias("value")
        ),
    )


def _invalid_record() -> Column:
    return F.struct(
        F.coalesce(F.col("value"), F.lit(b"")).alias("original"),
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("key").alias("source_key"),
        F.col(f"{ERROR}.code").alias("error_code"),
        F.col(f"{ERROR}.message").alias("message"),
        F.col(f"{ERROR}.field").alias("error_field"),
        F.col(INGEST_TIME_MS).alias("ingest_time"),
    )


def _error_headers(instance_id: str) -> Column:
    pairs = {
        "mesh.error.stage": F.lit("ingest"),
        "mesh.error.class": F.col(f"{ERROR}.code"),
        "mesh.error.message": F.col(f"{ERROR}.message"),
        "mesh.error.source.topic": F.col("topic"),
        "mesh.error.source.partition": F.col("partition").cast("string"),
        "mesh.error.source.offset": F.col("offset").cast("string"),
        "mesh.error.instance.id": F.lit(instance_id),
        "mesh.error.timestamp": F.col(INGEST_TIME_MS).cast("string"),
    }
    return F.array(
        *[
            F.struct(F.lit(k).alias("key"), v.cast("binary").alias("value"))
            for k, v in pairs.items()
        ]
    )
