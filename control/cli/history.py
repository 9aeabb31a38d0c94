"""``mesh history``: what the history holds (rows, bytes, days per table) and how far behind the
topics its job is, read from the tables' Delta logs and the job's checkpoint (no Spark)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from control.cli.arguments import positive_seconds
from shared.delta_log import exists, live_files, local_table
from shared.disk_space import size_text
from shared.endpoints import resolve_bootstrap
from shared.kafka.inspect import partition_watermarks
from shared.kafka.security import client_security
from shared.service_files import history_checkpoint, history_location
from shared.settings import Settings
from shared.spark_checkpoint import committed_kafka_offsets

#: Seconds between two looks at the job's progress while ``--wait`` waits.
WAIT_POLL_S = 2.0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "history", help="the history's tables (rows, bytes, days) and how far behind it is"
    )
    p.add_argument("--wait", type=positive_seconds, metavar="SECONDS",
                   help="first wait (at most SECONDS) until the job has stored everything the "
                   "topics hold now; exit 1 if it has not")  # fmt: skip
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    checkpoint = history_checkpoint(settings.home)
    if args.wait is not None and not _caught_up(settings, checkpoint, args.wait):
        behind = records_behind(settings, checkpoint)
        print(f"mesh: the history job did not catch up within {args.wait:g} s ({behind}; "
              "is it running? `mesh status`)")  # fmt: skip
        return 1
    location = history_location(settings.home, settings.history_location)
    folder = local_table(location)
    print(f"history  {location} (keeps {settings.history_days} days: MESH_HISTORY_DAYS)")
    tables = sorted(p for p in folder.iterdir() if exists(p)) if folder.is_dir() else []
    if not tables:
        print("no tables yet: the history job has stored nothing (python -m services.history)")
    else:
        heading = f"{'table':<14}{'rows':>12}{'bytes':>12}{'files':>7}{'days':>6}"
        print(f"  {heading}  oldest      newest")
        for table in tables:
            print("  " + table_line(table))
    print(f"lag      {records_behind(settings, checkpoint)}")
    return 0


def _caught_up(settings: Settings, checkpoint: Path, timeout_s: float) -> bool:
    """Whether the job's committed batches reach the topics' ends as they are now (records
    arriving meanwhile are not waited for) within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    targets: dict[tuple[str, int], int] | None = None
    while True:
        committed = committed_kafka_offsets(checkpoint)
        if committed is not None:
            if targets is None:
                ends = partition_watermarks(resolve_bootstrap(settings), sorted(committed),
                                            login=client_security(settings))  # fmt: skip
                targets = {(topic, p): high for topic, parts in ends.items()
                           for p, (_, high) in parts.items()}  # fmt: skip
            if all(committed.get(topic, {}).get(p, 0) >= high
                   for (topic, p), high in targets.items()):  # fmt: skip
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(WAIT_POLL_S)


def table_line(table: Path) -> str:
    """One table's row of the listing."""
    files = live_files(table)
    days = sorted({f.partition.get("event_date", "") for f in files} - {""})
    rows, size = sum(f.records for f in files), sum(f.size for f in files)
    oldest, newest = (days[0], days[-1]) if days else ("-", "-")
    return (f"{table.name:<14}{rows:>12,}{size_text(size):>12}{len(files):>7}{len(days):>6}  "
            f"{oldest:<10}  {newest}")  # fmt: skip


def records_behind(settings: Settings, checkpoint: Path) -> str:
    """How many records the topics hold past the job's last committed batch (``mesh status``
    shows it too)."""
    committed = committed_kafka_offsets(checkpoint)
    if committed is None:
        return "unknown: the history job has committed no batch yet"
    ends = partition_watermarks(resolve_bootstrap(settings), sorted(committed),
                                login=client_security(settings))  # fmt: skip
    behind = {
        topic: sum(max(high - committed[topic].get(p, low), 0) for p, (low, high) in parts.items())
        for topic, parts in ends.items()
    }
    detail = ", ".join(f"{topic} {count:,}" for topic, count in behind.items())
    return f"{sum(behind.values()):,} records behind ({detail})"
