"""The history's streaming query: every history topic, one micro-batch a trigger, into Delta.

The application id that makes each append idempotent (:mod:`services.history.writer`) belongs
to the checkpoint: it is made when the checkpoint is, and kept in it, because batch ids start
again at 0 with a new checkpoint; a new checkpoint gets a new id and starts after what the
tables hold (:mod:`services.history.resume`).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from services.history.config import HistoryConfig
from services.history.resume import partition_counts, starting_offsets, stored_offsets
from services.history.status import HistoryStatus
from services.history.upkeep import Upkeep
from services.history.writer import write_batch
from shared.avro.catalogue import Catalogue
from shared.endpoints import resolve_bootstrap
from shared.history_tables import REJECTED, history_tables
from shared.settings import Settings

QUERY_NAME = "history"
APP_ID_FILE = "history-app-id"
#: When the upkeep last ran (seconds since the epoch), beside the checkpoint.
UPKEEP_CLOCK_FILE = "history-upkeep-at"


def app_id(checkpoint: Path) -> str:
    """The checkpoint's application id, made with it."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    path = checkpoint / APP_ID_FILE
    if not path.exists():
        path.write_text(f"mesh-history-{uuid.uuid4().hex}\n")
    return path.read_text().strip()


def start_history_query(
    spark: SparkSession, config: HistoryConfig, settings: Settings, catalogue: Catalogue,
    kafka_options: dict[str, str] | None = None, status: HistoryStatus | None = None,
) -> StreamingQuery:  # fmt: skip
    """Start the query (``config.once``: read what is there now, then stop); ``kafka_options``
    log the source in to a secure cluster; ``status`` hears of each batch written."""
    tables = history_tables(config.names)
    topics = [t.topic for t in tables]
    fresh = not (config.checkpoint_dir / "offsets").exists()
    application = app_id(config.checkpoint_dir)
    start = "earliest"
    if fresh:
        counts = partition_counts(settings, topics)
        start = starting_offsets(counts, stored_offsets(spark, config.location, tables))
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", resolve_bootstrap(settings))
        .option("groupIdPrefix", config.names.history_group_prefix)
        .options(**(kafka_options or {}))
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", start)
        .option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
        .load()
    )

    upkeep = Upkeep(
        config.location,
        [*(t.name for t in tables), REJECTED],
        config.days,
        config.upkeep_interval_s,
        config.checkpoint_dir / UPKEEP_CLOCK_FILE,
    )

    def batch(frame: DataFrame, batch_id: int) -> None:
        write_batch(frame, batch_id, location=config.location, tables=tables,
                    catalogue=catalogue, app_id=application)  # fmt: skip
        if status is not None:
            status.batch_written()
        if upkeep.due(time.time()):  # between two batches: no append races it
            upkeep.run(spark)

    writer = (
        source.writeStream.queryName(QUERY_NAME)
        .option("checkpointLocation", str(config.checkpoint_dir))
        .foreachBatch(batch)
    )
    if config.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{config.trigger_s} seconds")
    return writer.start()
