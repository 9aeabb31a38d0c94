"""Dead letters of the aggregator: the original message on ``metrics.dlq`` with the reason.

Value and key are the original bytes; the ``mesh.error.*`` headers are the runtime's
(shared/dead_letters.py): stage ``decode``, class, message, source topic,
partition and offset, the aggregator's instance id, and when it was dead-lettered (epoch ms).
Built and written by Spark (a batch Kafka write inside ``foreachBatch``), so the bytes never
pass through Python.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from services.metrics_aggregator.decode import ERROR_CLASS, ERROR_MESSAGE
from shared.dead_letters import DECODE, MAX_MESSAGE_CHARS

#: Producer settings of the dead-letter write: no duplicates from retries, all replicas.
PRODUCER_OPTIONS = {
    "kafka.enable.idempotence": "true",
    "kafka.acks": "all",
    "kafka.linger.ms": "5",
}


def dead_letter_rows(invalid: DataFrame, topic: str, instance_id: str) -> DataFrame:
    """Kafka sink rows (topic, key, value, headers) for classified rows with an error."""
    return invalid.select(
        F.lit(topic).alias("topic"),
        F.col("key"),
        F.col("value"),
        _headers(instance_id).alias("headers"),
    )


def write_dead_letters(
    invalid: DataFrame,
    bootstrap: str,
    topic: str,
    instance_id: str,
    kafka_options: dict[str, str] | None = None,
) -> int:
    """Produce the rows of ``invalid`` (a static frame) to ``topic``; returns how many.

    The write returns once the broker acknowledged every message, so a batch is committed only
    after its dead letters are safe (a replayed batch may produce them again: at least once).
    """
    invalid.persist()
    try:
        count = invalid.count()
        if count:
            writer = dead_letter_rows(invalid, topic, instance_id).write.format("kafka")
            writer = writer.option("kafka.bootstrap.servers", bootstrap)
            for key, value in {**PRODUCER_OPTIONS, **(kafka_options or {})}.items():
                writer = writer.option(key, value)
            writer.save()
        return count
    finally:
        invalid.unpersist()


def _headers(instance_id: str) -> Column:
    message = F.col(ERROR_MESSAGE)
    cut = F.when(
        F.length(message) > MAX_MESSAGE_CHARS,
        F.concat(F.substring(message, 1, MAX_MESSAGE_CHARS - 3), F.lit("...")),
    ).otherwise(message)
    pairs = {
        "mesh.error.stage": F.lit(DECODE),
        "mesh.error.class": F.col(ERROR_CLASS),
        "mesh.error.message": cut,
        "mesh.error.source.topic": F.col("topic"),
        "mesh.error.source.partition": F.col("partition").cast("string"),
        "mesh.error.source.offset": F.col("offset").cast("string"),
        "mesh.error.instance.id": F.lit(instance_id),
        "mesh.error.timestamp": F.unix_millis(F.current_timestamp()).cast("string"),
    }
    return F.array(
        *[
            F.struct(F.lit(k).alias("key"), v.cast("binary").alias("value"))
            for k, v in pairs.items()
        ]
    )
