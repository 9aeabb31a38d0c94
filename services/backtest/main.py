"""``python -m services.backtest FOLDER [options]``: a detector over the history, with Spark.

``mesh backtest`` validates the folder as ``mesh deploy`` does and then runs this. It writes the
alerts (Parquet) and ``summary.json`` under ``--out`` and prints the summary, with a progress bar
while Spark works. Exit codes: 0 done, 1 Spark failed, 2 a mistake (bad dates, an unreadable
history, an empty range, a master that does not answer, an ``--out`` already used), told in one
line, with nothing written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from services.backtest.compare import compare_lines
from services.backtest.session import backtest_session
from services.backtest.summary import summary_lines
from services.backtest.workflow import run_backtest
from shared.detector.loading import load_detector
from shared.errors import MeshError
from shared.service_cli import ServiceArgumentParser, parse_service_args
from shared.service_files import history_location
from shared.settings import Settings
from shared.spark_master import check_master_answers
from shared.spark_session import stop_spark

NAME = "backtest"


def parser() -> argparse.ArgumentParser:
    p = ServiceArgumentParser(
        prog="python -m services.backtest",
        description="Run a detector's detect() over the history's records, with Spark.",
    )
    p.add_argument("folder", help="the detector's folder (as for mesh deploy) or module name")
    p.add_argument("--from", dest="date_from", type=_date, metavar="DATE",
                   help="first event date (YYYY-MM-DD, UTC); default: the oldest kept")  # fmt: skip
    p.add_argument("--to", dest="date_to", type=_date, metavar="DATE",
                   help="last event date, included; default: the newest")  # fmt: skip
    p.add_argument("--master", default="local[2]", help="Spark master (spark://host:7077)")
    p.add_argument("--out", type=Path, help="folder for alerts/ and summary.json (default "
                   "$MESH_HOME/backtests/<detector>-<UTC time>)")  # fmt: skip
    p.add_argument("--compare", metavar="NAME",
                   help="diff against the alerts deployed detector NAME raised")  # fmt: skip
    p.add_argument("--location", help="the history's tables (default MESH_HISTORY_LOCATION)")
    return p


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date like 2026-09-30") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_service_args(parser(), argv, NAME)
    if isinstance(args, int):
        return args
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    try:
        if args.date_from and args.date_to and args.date_from > args.date_to:
            raise MeshError(f"--from {args.date_from} is after --to {args.date_to}")
        settings = Settings.from_env()
        return run(args, settings)
    except MeshError as error:
        print(f"{NAME}: error: {error}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Load, check, replay, write, summarise; see the module doc."""
    detector, _manifest = load_detector(args.folder)
    out = _fresh_out(args.out or _default_out(settings, detector.name))
    location = args.location or history_location(settings.home, settings.history_location)
    check_master_answers(args.master)
    spark = backtest_session(settings, args.master)
    try:
        summary = run_backtest(spark, detector, location, args.date_from, args.date_to, out,
                               compare_with=args.compare)  # fmt: skip
    finally:
        stop_spark(spark, keep_archive=False)
    (out / "summary.json").write_text(json.dumps(summary.as_json(), indent=2) + "\n")
    for line in summary_lines(summary):
        print(line)
    if summary.compare is not None:
        for line in compare_lines(args.compare, summary.compare):
            print(line)
    return 0


def _default_out(settings: Settings, detector: str) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return settings.home / "backtests" / f"{detector}-{stamp}"


def _fresh_out(out: Path) -> Path:
    """``out`` resolved, refused if it already holds a backtest (nothing is overwritten)."""
    out = out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MeshError(f"--out {out} already exists and is not empty; give a new folder")
    return out
