"""A detector's inputs, read from the history and put in the order the streaming runtime saw them.

Live, one task of a detector reads partition *p* of each of its input topics, and a record
reaches ``detect`` in offset order within its topic partition. The replay gets the same: rows
are grouped by Kafka partition number (one Spark partition holds whole Kafka partitions) and
sorted, within each, by offset. A detector with two inputs (new_country) read both partitions
*p* interleaved in about the order the records arrived; the history keeps each record's Kafka
timestamp, so the two are merged by it (then topic, then offset). That keeps every customer's
own records in offset order: one customer's records are routed by one ingest task, whose
producer stamps them in order, so only records of different customers can share or swap a
millisecond, and they share nothing but the task's stream time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from services.backtest.errors import BacktestError
from services.backtest.replay import (
    OFFSET,
    PARTITION,
    RECORD_TYPE,
    TIMESTAMP_MS,
    TOPIC,
    RecordShape,
)
from shared.history_tables import COORDINATES, EVENT_DATE, table_path

#: History columns that are not the record's own fields.
NOT_FIELDS = {*COORDINATES, EVENT_DATE}


def read_history(
    spark: SparkSession,
    location: str,
    inputs: Sequence[str],
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> tuple[dict[str, DataFrame], dict[str, int]]:
    """Each input's history table between the two event dates (inclusive), and the Delta version
    read: the table is pinned to it, so a rerun against that version sees the same rows (Delta's
    time travel, ``versionAsOf``) whatever the history job appended since."""
    frames: dict[str, DataFrame] = {}
    versions: dict[str, int] = {}
    for kind in inputs:
        path = table_path(location, kind)
        version = _latest_version(spark, path)
        frame = spark.read.format("delta").option("versionAsOf", version).load(path)
        if date_from is not None:
            frame = frame.where(F.col(EVENT_DATE) >= F.lit(date_from))
        if date_to is not None:
            frame = frame.where(F.col(EVENT_DATE) <= F.lit(date_to))
        frames[kind], versions[kind] = frame, version
    return frames, versions


def _latest_version(spark: SparkSession, path: str) -> int:
    try:
        rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()
    except Exception as exc:  # Spark's AnalysisException: not a Delta table, or unreadable
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BacktestError(
            f"cannot read the history table {path}: {reason[:200]} (is MESH_HISTORY_LOCATION "
            "right, and has `python -m services.history` stored anything yet?)"
        ) from None
    return int(rows[0]["version"])


def replay_order(
    frames: Mapping[str, DataFrame],
    stateful: bool = True,
    read: Collection[str] | None = None,
) -> tuple[DataFrame, RecordShape]:
    """The rows of every input as replay rows (see :mod:`services.backtest.replay`), whole
    Kafka partitions in each Spark partition, sorted as the runtime read them. A stateless
    detector judges each record alone: its rows stay as read (no shuffle, no sort: 1.5x as
    fast, docs/benchmarks.md). ``read`` names the only fields the detector reads
    (:mod:`shared.detector.fields_read`); the other columns are never read from the tables."""
    shape = RecordShape(
        fields={kind: _fields(frame, read) for kind, frame in frames.items()},
        maps={kind: _map_fields(frame, read) for kind, frame in frames.items()},
    )
    merged = len(frames) > 1
    parts = [
        _replay_rows(kind, frame, shape.fields[kind], merged) for kind, frame in frames.items()
    ]
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part, allowMissingColumns=True)
    if not stateful:
        return rows, shape
    spark = rows.sparkSession
    numbers = 2 * max(spark.sparkContext.defaultParallelism, 1)
    # Hashed, not ranged (a range needs a sampling pass over everything upstream), into twice
    # as many Spark partitions as task slots. Kafka partitions may share a Spark partition;
    # sorted by partition first, each is still whole and in order: two inputs merged by Kafka
    # timestamp, then topic and offset; one input in offset order.
    order = (PARTITION, TIMESTAMP_MS, TOPIC, OFFSET) if merged else (PARTITION, OFFSET)
    ordered = rows.repartition(numbers, PARTITION).sortWithinPartitions(*order)
    return ordered, shape


def _fields(frame: DataFrame, read: Collection[str] | None) -> list[str]:
    return [
        name for name in frame.columns if name not in NOT_FIELDS and (read is None or name in read)
    ]


def _map_fields(frame: DataFrame, read: Collection[str] | None) -> list[str]:
    kept = set(_fields(frame, read))
    return [
        f.name for f in frame.schema.fields if f.name in kept and isinstance(f.dataType, T.MapType)
    ]


def _replay_rows(kind: str, frame: DataFrame, names: Sequence[str], merged: bool) -> DataFrame:
    """One input's rows: replay columns, then the fields ``names`` with timestamps as epoch ms
    (Avro's ``timestamp-millis`` is a long live; Spark reads it as a timestamp)."""
    types = {f.name: f.dataType for f in frame.schema.fields}
    fields = [
        F.unix_millis(F.col(name)).alias(name)
        if isinstance(types[name], T.TimestampType)
        else F.col(name)
        for name in names
    ]
    timestamp_ms = F.unix_millis(F.col("kafka_timestamp"))
    return frame.select(
        *([F.lit(kind).alias(RECORD_TYPE)] if merged else []),
        F.col("kafka_partition").alias(PARTITION),
        F.col("kafka_topic").alias(TOPIC),
        F.col("kafka_offset").alias(OFFSET),
        timestamp_ms.alias(TIMESTAMP_MS),
        *fields,
    )
