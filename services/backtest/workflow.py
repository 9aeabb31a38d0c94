"""One backtest from start to end: read the range, check it holds records, replay with a
progress bar, write the alerts, count them, and compare with a deployed detector if asked."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from services.backtest.api import replay_history
from services.backtest.compare import compare, stored_alerts
from services.backtest.errors import BacktestError
from services.backtest.inputs import read_history
from services.backtest.progress import ProgressBar
from services.backtest.summary import Summary, count_alerts
from shared.detector.declaration import Detector
from shared.history_tables import EVENT_DATE, table_path

JOB_GROUP = "mesh-backtest"


def run_backtest(
    spark: SparkSession,
    detector: Detector,
    location: str,
    date_from: dt.date | None,
    date_to: dt.date | None,
    out: Path,
    *,
    compare_with: str | None = None,
) -> Summary:
    """Write ``out/alerts`` and return the summary (``summary.json`` is the caller's)."""
    frames, versions = read_history(spark, location, detector.inputs, date_from, date_to)
    first, last = _range_held(frames, location, date_from, date_to)
    stored = _stored_alerts(spark, location, compare_with) if compare_with else None
    started = time.monotonic()
    replay = replay_history(detector, frames)
    sc = spark.sparkContext
    sc.setJobGroup(JOB_GROUP, f"backtest of {detector.name}")
    with ProgressBar(sc, JOB_GROUP):
        replay.alerts.write.parquet((out / "alerts").as_uri())
    seconds = time.monotonic() - started
    counts = replay.counts.value
    summary = Summary(
        detector=detector.name, version=detector.version, inputs=list(detector.inputs),
        date_from=first, date_to=last, table_versions=versions, records=counts.records,
        failures=counts.failures, first_failure=counts.first_failure, seconds=seconds,
        output=str(out), fields_read=replay.fields.describe(),
    )  # fmt: skip
    written = spark.read.parquet((out / "alerts").as_uri())
    count_alerts(summary, written)
    if stored is not None:
        old = stored_alerts(stored, compare_with or "", date_from, date_to)
        summary.compare = {"detector": compare_with, **compare(written, old)}
    return summary


def _range_held(
    frames: dict[str, DataFrame], location: str, date_from: dt.date | None,
    date_to: dt.date | None,
) -> tuple[str, str]:  # fmt: skip
    """The first and last event date of the records in range; a BacktestError if there are none
    (saying which dates the history does hold)."""
    days = [
        frame.agg(F.min(EVENT_DATE), F.max(EVENT_DATE), F.count(F.lit(1))).first()
        for frame in frames.values()
    ]
    held = [(d[0], d[1]) for d in days if d is not None and d[2]]
    if not held:
        asked = f"{date_from or 'the start'} .. {date_to or 'the end'}"
        raise BacktestError(
            f"the history at {location} holds no {', '.join(frames)} records for {asked}"
            + _what_is_held(next(iter(frames.values())).sparkSession, location, list(frames))
        )
    return str(min(h[0] for h in held)), str(max(h[1] for h in held))


def _what_is_held(spark: SparkSession, location: str, kinds: list[str]) -> str:
    """``; it holds 2026-09-01 .. 2026-10-30`` over the whole tables (no date filter)."""
    spans = []
    for kind in kinds:
        whole = spark.read.format("delta").load(table_path(location, kind))
        row = whole.agg(F.min(EVENT_DATE), F.max(EVENT_DATE)).first()
        if row is not None and row[0] is not None:
            spans.append((row[0], row[1]))
    if not spans:
        return " (its tables are empty)"
    return f"; it holds {min(s[0] for s in spans)} .. {max(s[1] for s in spans)}"


def _stored_alerts(spark: SparkSession, location: str, name: str) -> DataFrame:
    try:
        return spark.read.format("delta").load(table_path(location, "alerts"))
    except Exception:  # AnalysisException: no alerts table yet
        raise BacktestError(
            f"--compare {name}: the history at {location} has no alerts table yet"
        ) from None
