"""One micro-batch of the history: split by topic, decode, append each table once.

Each append is a Delta transaction tagged with the query's application id and the batch id
(``txnAppId`` / ``txnVersion``): Delta records the highest version it committed per application
and table, and skips an append whose version it already has. A batch that Spark runs again after
a kill -9 (its offsets were logged, its commit was not) therefore adds nothing a second time to
the tables it had already written, and the rest of what it had not.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from services.history.rows import history_rows, rejected_rows
from shared.avro.catalogue import Catalogue
from shared.history_tables import EVENT_DATE, REJECTED, HistoryTable, table_path
from shared.spark_avro import classify, invalid, valid

log = logging.getLogger(__name__)


@dataclass
class BatchCounts:
    """Rows appended by one batch, per table (``_rejected`` included)."""

    batch_id: int
    rows: dict[str, int] = field(default_factory=dict)


def write_batch(
    batch: DataFrame,
    batch_id: int,
    *,
    location: str,
    tables: list[HistoryTable],
    catalogue: Catalogue,
    app_id: str,
) -> BatchCounts:
    """Append ``batch`` (Kafka rows of every history topic) to the history at ``location``."""
    counts = BatchCounts(batch_id)
    # One task per core, not one per Kafka partition: each task pays a fixed cost whatever its
    # size (its projections' code generated, Delta's statistics tracker built, the task
    # deserialized), which was most of a one-minute batch's CPU (docs/benchmarks.md, issue 31).
    cores = batch.sparkSession.sparkContext.defaultParallelism
    batch = batch.coalesce(cores).persist()
    try:
        present = {row["topic"]: row["count"] for row in batch.groupBy("topic").count().collect()}
        for table in tables:
            if not present.get(table.topic):
                continue
            classified = classify(batch.filter(F.col("topic") == table.topic), catalogue,
                                  table.schema)  # fmt: skip
            # Decoded again by each write rather than cached: only the raw batch is (building the
            # in-memory cache was the second fixed cost found, docs/benchmarks.md).
            bad = invalid(classified).count()
            counts.rows[table.name] = present[table.topic] - bad
            if counts.rows[table.name]:
                _append(history_rows(valid(classified)), location, table.name, app_id, batch_id)
            if bad:
                # One transaction per source table in _rejected: each is idempotent on its own.
                rejected = rejected_rows(invalid(classified))
                _append(rejected, location, REJECTED, f"{app_id}.{table.name}", batch_id)
                counts.rows[REJECTED] = counts.rows.get(REJECTED, 0) + bad
    finally:
        batch.unpersist()
    written = {name: n for name, n in counts.rows.items() if n}
    if written:
        log.info("history batch %d: %s", batch_id, written)
    return counts


def _append(rows: DataFrame, location: str, table: str, app_id: str, batch_id: int) -> None:
    """Append ``rows`` to ``table`` as the transaction (app_id, batch_id)."""
    (
        rows.write.format("delta")
        .mode("append")
        .partitionBy(EVENT_DATE)
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .option("mergeSchema", "true")  # a new schema version adds optional columns
        .save(table_path(location, table))
    )
