"""``mesh history``: what the history holds (rows, bytes, days per table) and how far behind the
topics its job is, read from the tables' Delta logs and the job's checkpoint (no Spark)."""

from __future__ import annotations

import argparse
from pathlib import Path

from shared.delta_log import exists, live_files, local_table
from shared.disk_space import size_text
from shared.endpoints import resolve_bootstrap
from shared.kafka.inspect import partition_watermarks
from shared.kafka.security import client_security
from shared.service_files import history_checkpoint, history_location
from shared.settings import Settings
from shared.spark_checkpoint import committed_kafka_offsets


def register(subparsers: argparse._SubParsersAction) -> None:
    subparsers.add_parser(
        "history", help="the history's tables (rows, bytes, days) and how far behind it is"
    ).set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
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
    print(lag_line(settings, history_checkpoint(settings.home)))
    return 0


def table_line(table: Path) -> str:
    """One table's row of the listing."""
    files = live_files(table)
    days = sorted({f.partition.get("event_date", "") for f in files} - {""})
    rows, size = sum(f.records for f in files), sum(f.size for f in files)
    oldest, newest = (days[0], days[-1]) if days else ("-", "-")
    return (f"{table.name:<14}{rows:>12,}{size_text(size):>12}{len(files):>7}{len(days):>6}  "
            f"{oldest:<10}  {newest}")  # fmt: skip


def lag_line(settings: Settings, checkpoint: Path) -> str:
    """How many records the topics hold past the job's last committed batch."""
    committed = committed_kafka_offsets(checkpoint)
    if committed is None:
        return "behind   unknown: the history job has committed no batch yet"
    ends = partition_watermarks(resolve_bootstrap(settings), sorted(committed),
                                login=client_security(settings))  # fmt: skip
    behind = {
        topic: sum(max(high - committed[topic].get(p, low), 0) for p, (low, high) in parts.items())
        for topic, parts in ends.items()
    }
    detail = ", ".join(f"{topic} {count:,}" for topic, count in behind.items())
    return f"behind   {sum(behind.values()):,} records ({detail})"
