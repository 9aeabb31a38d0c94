"""Where a history query without a checkpoint starts: after what the tables already hold.

The checkpoint says which offsets a running query has written; a checkpoint lost or deleted
would make a new query read every topic from its start and append it all a second time. So a
fresh query asks the tables instead: per topic partition, the highest offset stored (valid or
rejected), and starts one past it; a partition the history has never seen starts at its first
offset. Spark's Kafka source wants every partition of a subscribed topic named once specific
offsets are given, so the partitions come from the broker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.utils import AnalysisException

from shared.history_tables import REJECTED, HistoryTable, table_path
from shared.kafka.config import admin_config
from shared.settings import Settings

#: Spark's Kafka source's "from the first offset" in a startingOffsets document.
EARLIEST = -2


def stored_offsets(
    spark: SparkSession, location: str, tables: list[HistoryTable]
) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the highest offset the history holds, over every table."""
    highest: dict[tuple[str, int], int] = {}
    for name in [*(t.name for t in tables), REJECTED]:
        try:
            stored = spark.read.format("delta").load(table_path(location, name))
        except AnalysisException:  # no such table yet: nothing of it stored
            continue
        grouped = stored.groupBy("kafka_topic", "kafka_partition").agg(F.max("kafka_offset"))
        for topic, partition, offset in grouped.collect():
            key = (topic, int(partition))
            highest[key] = max(highest.get(key, -1), int(offset))
    return highest


def starting_offsets(partitions: Mapping[str, int], stored: Mapping[tuple[str, int], int]) -> str:
    """The source's ``startingOffsets`` JSON: one past what is stored, else the first offset.

    ``partitions`` maps each subscribed topic to its partition count."""
    document = {
        topic: {
            str(p): stored[(topic, p)] + 1 if (topic, p) in stored else EARLIEST
            for p in range(count)
        }
        for topic, count in partitions.items()
    }
    return json.dumps(document, sort_keys=True)


def partition_counts(settings: Settings, topics: list[str]) -> dict[str, int]:
    """Each existing topic's partition count (a topic not created yet has none to name)."""

    metadata = AdminClient(admin_config(settings)).list_topics(timeout=15).topics
    return {topic: len(metadata[topic].partitions) for topic in topics if topic in metadata}
