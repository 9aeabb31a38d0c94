"""``backtest(detector, history)``: a detector over a DataFrame of history, as a notebook runs it.

From any PySpark session with Delta Lake loaded (``shared.spark_session.spark_session(...,
delta=True)``, or your own with the same jars)::

    from services.backtest import backtest, read_history
    from shared.detector.loading import load_detector

    detector, _ = load_detector("detectors/velocity")
    tables, _ = read_history(spark, "file:///home/me/.mesh/history/tables", detector.inputs)
    alerts = backtest(detector, tables)          # a DataFrame, computed when you ask for it
    alerts.groupBy("rule", "severity").count().show()

``history`` is one DataFrame of a history table (a single-input detector), or a mapping of
record type to DataFrame (``read_history`` gives that, pinned to a table version). Filter it as
you like first (dates, customers): the replay sees exactly the rows it is given, per Kafka
partition in offset order (:mod:`services.backtest.inputs`). Only the fields ``detect`` reads
are read from the tables, when its source says which (:mod:`shared.detector.fields_read`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark import Accumulator, AccumulatorParam, cloudpickle
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from services.backtest.errors import BacktestError
from services.backtest.inputs import replay_order
from services.backtest.replay import ALERT_DDL, ReplayCounts, replay
from shared.detector.declaration import Detector
from shared.detector.fields_read import FieldsRead, fields_read


class _CountsParam(AccumulatorParam):  # type: ignore[type-arg]
    """Adds the replay counts of every Spark task (records, failures, the first failure)."""

    def zero(self, value: ReplayCounts) -> ReplayCounts:
        return ReplayCounts()

    def addInPlace(self, a: ReplayCounts, b: ReplayCounts) -> ReplayCounts:
        a.records += b.records
        a.failures += b.failures
        a.first_failure = a.first_failure or b.first_failure
        return a


@dataclass(frozen=True)
class Replay:
    """A backtest's alerts (lazy) and the counts its tasks add up once an action ran it."""

    alerts: DataFrame
    counts: Accumulator  # type: ignore[type-arg]
    #: The record fields read from the history (all, when detect's source does not say).
    fields: FieldsRead


def backtest(detector: Detector, history: DataFrame | Mapping[str, DataFrame]) -> DataFrame:
    """The alerts ``detector`` raises over ``history``: the ``alert`` schema's columns, times
    as timestamps (as in the history's ``alerts`` table)."""
    return replay_history(detector, history).alerts


def replay_history(detector: Detector, history: DataFrame | Mapping[str, DataFrame]) -> Replay:
    """:func:`backtest`, with the counts the command line prints."""
    frames = _by_input(detector, history)
    read = fields_read(detector.detect)
    ordered, shape = replay_order(frames, detector.stateful, read.fields)
    spark = ordered.sparkSession
    counts = spark.sparkContext.accumulator(ReplayCounts(), _CountsParam())
    _ship_by_value(detector)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tally = ReplayCounts()
        yield from replay(detector, batches, shape, tally)
        counts.add(tally)

    alerts = ordered.mapInArrow(run, ALERT_DDL).withColumns(
        {name: F.timestamp_millis(F.col(name)) for name in ("event_time", "detection_time")}
    )
    return Replay(alerts, counts, read)


def _by_input(
    detector: Detector, history: DataFrame | Mapping[str, DataFrame]
) -> dict[str, DataFrame]:
    if isinstance(history, DataFrame):
        if len(detector.inputs) != 1:
            raise BacktestError(
                f"detector {detector.name} reads {', '.join(detector.inputs)}: give backtest() "
                "a mapping of record type to DataFrame (read_history gives one)"
            )
        return {detector.inputs[0]: history}
    missing = [kind for kind in detector.inputs if kind not in history]
    if missing:
        raise BacktestError(
            f"detector {detector.name} reads {', '.join(detector.inputs)}; the history given "
            f"has no {', '.join(missing)}"
        )
    return {kind: history[kind] for kind in detector.inputs}


def _ship_by_value(detector: Detector) -> None:
    """Pickle the detector's module with its code: a folder's module (``mesh deploy``'s way of
    loading) is not importable on Spark's Python workers, nor on a cluster's nodes."""
    module = sys.modules.get(detector.detect.__module__)
    if module is not None and not module.__name__.startswith(("shared.", "services.")):
        cloudpickle.register_pickle_by_value(module)
