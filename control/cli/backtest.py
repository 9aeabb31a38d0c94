"""``mesh backtest FOLDER``: what a detector would have raised over the history, before going live.

The folder is checked exactly as ``mesh deploy`` checks it (manifest, import, schemas, dry run);
then ``python -m services.backtest`` runs it over the history with Spark. Its summary and progress
bar come to the terminal; Spark's own log goes to ``$MESH_HOME/logs/backtest.log``, which is
named when something fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from control.deploy.validate import validate
from shared.errors import MeshError
from shared.settings import Settings

#: Lines of Spark's log shown when a backtest fails without its own one-line error.
TAIL_SHOWN = 5


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "backtest", help="run a detector folder over the history (Spark) and summarise its alerts"
    )
    p.add_argument("folder", type=Path, help="detector folder with manifest.yaml")
    p.add_argument("--from", dest="date_from", metavar="DATE", help="first event date (UTC)")
    p.add_argument("--to", dest="date_to", metavar="DATE", help="last event date, included")
    p.add_argument("--master", help="Spark master, e.g. spark://127.0.0.1:7077 (local[2])")
    p.add_argument("--out", type=Path, help="folder for alerts/ and summary.json")
    p.add_argument("--compare", metavar="NAME", help="diff against deployed detector NAME")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    checked = validate(args.folder)
    print(f"{checked.name} {checked.version}: valid (dry run: {checked.dry_run_records:,} "
          f"records, {checked.dry_run_alerts:,} alerts); backtesting over the history")  # fmt: skip
    command = [sys.executable, "-m", "services.backtest", str(args.folder.resolve())]
    for flag, value in (("--from", args.date_from), ("--to", args.date_to),
                        ("--master", args.master), ("--out", args.out),
                        ("--compare", args.compare)):  # fmt: skip
        if value is not None:
            command += [flag, str(value)]
    log_file = settings.home / "logs" / "backtest.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("w") as log:
        code = subprocess.call(command, stderr=log)
    if code != 0:
        raise MeshError(_failure(log_file, code))
    return 0


def _failure(log_file: Path, code: int) -> str:
    """The backtest's own one-line error if it gave one, else the tail of Spark's log."""
    lines = log_file.read_text(errors="replace").splitlines()
    told = [line.removeprefix("backtest: error: ") for line in lines
            if line.startswith("backtest: error: ")]  # fmt: skip
    if told:
        return told[-1]
    tail = " | ".join(line.strip() for line in lines[-TAIL_SHOWN:] if line.strip())
    return f"the backtest failed (exit {code}): {tail} (whole log: {log_file})"
