"""The batch half: the history job's write rate, and backtests over what it stored.

One feed of generator records (1 000 000 in all, transactions and logins, 8 partitions) is
produced once. Then, in the same run:

- the history job (``services.history``'s query, ``--once``, local[2]) stores it: records/s;
- each reference detector is backtested over the stored history on local[2]
  (``run_backtest``, what ``mesh backtest`` runs): records/s, as a ratio to the streaming
  runtime draining the same topics (one instance, in-process) and to two ceilings: a plain
  Spark read of the same tables (every column, nothing done with it; and only the columns
  large_amount reads) and the backtest's whole pipeline with a detector that does nothing
  (read, order, Arrow, records as dicts; it reads only the fields an alert is built from).
  Each backtest row is the second of two runs of its detector, the first's rate in its notes.

From the backtest rates: what 60 days at 25 M records a day (1.5 billion) take on these 2 cores.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from bench.drain import drain
from bench.kafka_fixture import create_topic
from bench.result import Result
from services.backtest.workflow import run_backtest
from services.history.config import HistoryConfig
from services.history.query import start_history_query
from shared.avro.catalogue import load_catalogue
from shared.detector import Context, Detector, KeyValue, detector
from shared.detector.fields_read import fields_read
from shared.detector.loading import load_detector
from shared.history_tables import table_path
from shared.settings import Settings
from shared.spark_session import spark_session, stop_spark
from shared.topic_names import TopicNames
from testkit.detector_runs import produce_feed
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

COUNT = 1_000_000
PARTITIONS = 8
DETECTORS = ("large_amount", "velocity", "new_country")
#: The seeds' history: 60 days at 25 M records a day.
HISTORY_RECORDS = 60 * 25_000_000


@detector(name="noop", version="1", inputs=["transactions"])
def noop(record: dict[str, Any], ctx: Context) -> None:
    """Nothing: what the replay costs without a detector's own work (read as it lies)."""


@detector(name="noop_ordered", version="1", inputs=["transactions"], state=[KeyValue("unused")])
def noop_ordered(record: dict[str, Any], ctx: Context) -> None:
    """Nothing, but declared stateful: the replay's cost with its rows put in Kafka order."""


def run_backtest_bench(settings: Settings) -> list[Result]:
    prefix = f"bench.hist.{uuid.uuid4().hex[:8]}."
    topics = {
        kind: create_topic(settings, "", PARTITIONS, name=TopicNames(prefix).records(kind))
        for kind in ("transactions", "logins")
    }
    create_topic(settings, "", PARTITIONS, name=TopicNames(prefix).alerts)
    start_ms = int(time.time() * 1000) - 2 * 86_400_000  # within the history's retention
    counts = produce_feed(
        settings, topics, valid_records(StreamConfig(start_time_ms=start_ms, count=COUNT, seed=7))
    )
    stored = sum(counts.values())
    home = settings.home / "bench-backtest" / uuid.uuid4().hex[:8]
    history_settings = replace(settings, home=home, topic_prefix=prefix)
    config = HistoryConfig.from_settings(history_settings, once=True)
    spark = spark_session("bench-backtest", history_settings, "local[2]", 2, delta=True)
    rows: list[Result] = []
    try:
        started = time.perf_counter()
        query = start_history_query(spark, config, history_settings, load_catalogue())
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"the history job failed: {query.exception()}")
        rows.append(
            Result(
                "history_write",
                stored,
                time.perf_counter() - started,
                notes=f"history job --once, local[2], Delta, {PARTITIONS} partitions",
            )
        )
        read, read_s = _plain_read(spark, table_path(config.location, "transactions"))
        rows.append(
            Result(
                "history_plain_read",
                read,
                read_s,
                notes="Spark reads every column of transactions (noop sink)",
            )
        )
        large_amount, _ = load_detector("detectors.large_amount")
        wanted = fields_read(large_amount.detect).fields
        read, read_s = _plain_read(spark, table_path(config.location, "transactions"), wanted)
        rows.append(
            Result(
                "history_plain_read_fields",
                read,
                read_s,
                notes=f"Spark reads the {len(wanted or ())} columns large_amount reads (noop sink)",
            )
        )

        def backtested(found: Detector, name: str, notes: str) -> Result:
            """The second of two runs: a first run of a detector pays once for the JIT of its
            columns' code and its Python workers' imports (0.3-0.5 s, reported as
            ``first_run_per_s``); 1.5 G records would pay it once, not per million."""
            first = run_backtest(spark, found, config.location, None, None, out / f"{name}.1")
            summary = run_backtest(spark, found, config.location, None, None, out / name)
            return Result(
                name,
                summary.records,
                summary.seconds,
                notes=notes,
                extra={"alerts": summary.alerts, "first_run_per_s": first.records_per_s},
            )

        out = home / "backtests"
        rows.append(backtested(noop, "backtest_noop", "a detect() that does nothing, stateless"))
        rows.append(
            backtested(
                noop_ordered,
                "backtest_noop_ordered",
                "the same, stateful: rows put in Kafka order (shuffle, sort)",
            )
        )
        for name in DETECTORS:
            found, _ = load_detector(f"detectors.{name}")
            kind = "stateful" if found.stateful else "stateless"
            row = backtested(found, f"backtest_{name}", "")
            row.notes = (
                f"local[2], {kind}, {row.extra['alerts']:.0f} alerts, "
                f"first run {row.extra['first_run_per_s']:,.0f}/s"
            )
            rows.append(row)
    finally:
        stop_spark(spark, keep_archive=False)
    for name in DETECTORS:
        rows.append(_drained(settings, name, topics, counts))
    return _with_ratios(rows)


def _plain_read(spark: Any, path: str, columns: Collection[str] | None = None) -> tuple[int, float]:
    frame = spark.read.format("delta").load(path)
    if columns is not None:
        frame = frame.select(*sorted(columns))
    records = frame.count()
    started = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return records, time.perf_counter() - started


def _drained(
    settings: Settings, name: str, topics: dict[str, str], counts: dict[str, int]
) -> Result:
    found, _ = load_detector(f"detectors.{name}")
    prefix = f"bench.histdrain.{uuid.uuid4().hex[:8]}."
    names = TopicNames(prefix)
    for topic in (names.alerts, names.detectors_dlq):
        create_topic(settings, "", PARTITIONS, name=topic)
    inputs = {kind: topics[kind] for kind in found.inputs}
    figures = drain(settings, name, inputs, prefix, sum(counts[k] for k in found.inputs))
    return Result(
        f"drain_{name}",
        figures["records"],
        figures["seconds"],
        notes=f"streaming runtime, 1 instance, same topics, {figures['alerts']} alerts",
    )


def _with_ratios(rows: list[Result]) -> list[Result]:
    """Each backtest row's notes gain its ratio to the runtime's drain of the same records and
    to the two ceilings, and how long 60 days at 25 M a day would take at its rate."""
    by_name = {row.scenario: row for row in rows}
    plain = by_name["history_plain_read"].rate
    for name in DETECTORS:
        row, drained = by_name[f"backtest_{name}"], by_name[f"drain_{name}"]
        stateless = "stateless" in row.notes
        nothing = by_name["backtest_noop" if stateless else "backtest_noop_ordered"].rate
        hours = HISTORY_RECORDS / row.rate / 3600 if row.rate else float("inf")
        row.notes += (
            f"; {row.rate / drained.rate:.2f}x the runtime's drain, "
            f"{row.rate / nothing:.2f} of the no-op backtest, "
            f"{row.rate / plain:.3f} of a plain read; 1.5 G records: {hours:.1f} h"
        )
        row.extra.update(
            vs_drain=row.rate / drained.rate,
            vs_noop=row.rate / nothing,
            vs_plain_read=row.rate / plain,
            hours_for_1_5g=hours,
        )
    return rows
