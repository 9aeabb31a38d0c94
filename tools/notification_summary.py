"""``python -m tools.notification_summary --seed N``: were the planted frauds notified, and how
fast? The last step of ``make demo``.

It reads what the people at the end of the mesh got: the demo webhook receiver's record
(``$MESH_HOME/webhook_receiver/received.jsonl``) and the shipped rules' audit file
(``$MESH_HOME/notifier/notifications.jsonl``), and checks off every alert the run's ground truth
planted (detector, source record, event time), waiting until all are there or the time is up.
It prints the notifier's deliveries per channel and the duplicates it suppressed (its status
file), and for the planted frauds the time from the raw record reaching Kafka to its first
notification, p50 / p99 / max. Exit status 1 if a planted fraud was never notified.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from shared.json_files import read_json
from shared.service_files import notifier_status_file, notifier_text
from shared.settings import Settings

#: (detector, source record id, event time ms), as tools.loadgen.score names a planted alert.
AlertKey = tuple[str, str, int]


def delivered(lines: Iterable[dict[str, Any]]) -> dict[AlertKey, float]:
    """Each alert's first notification: its key -> ms from the raw record to the notification
    (nan when the notifier did not know the raw record's timestamp)."""
    first: dict[AlertKey, float] = {}
    for line in lines:
        alert = line.get("alert", line)  # the audit file nests the alert, the receiver does not
        key = (str(alert.get("detector")), str(alert.get("source_record_id")),
               _millis(alert.get("event_time")))  # fmt: skip
        at = line.get("at_ms", line.get("delivered_ms"))
        source = line.get("source_ms")
        took = float(at - source) if at is not None and source is not None else float("nan")
        if key not in first or took < first[key]:
            first[key] = took
    return first


def _millis(value: Any) -> int:
    """An event time as the ground truth has it (ms), from the ISO text the alert's JSON has."""
    if isinstance(value, (int, float)):
        return int(value)
    moment = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a notification file so far (none if it is not there yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:  # a line still being written
            continue
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.notification_summary",
                                     description=__doc__)  # fmt: skip
    parser.add_argument("--seed", type=int, default=42, help="the run's seed (42)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds to wait (90)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    truth_file = settings.home / "loadgen" / f"ground-truth-seed{args.seed}.jsonl"
    try:
        truth = [json.loads(line) for line in truth_file.read_text().splitlines() if line]
    except OSError as error:
        print(f"notifications: cannot read the ground truth {truth_file}: {error.strerror}")
        return 2
    planted = {(e["detector"], e["record_id"], e["event_time"]) for e in truth
               if e["entry"] == "alert"}  # fmt: skip
    sources = [settings.home / "webhook_receiver" / "received.jsonl",
               settings.home / "notifier" / "notifications.jsonl"]  # fmt: skip
    deadline = time.monotonic() + args.timeout
    while True:
        first = delivered(line for path in sources for line in read_lines(path))
        notified = {key: first[key] for key in planted if key in first}
        if len(notified) == len(planted) or time.monotonic() > deadline:
            break
        time.sleep(1)
    status = read_json(notifier_status_file(settings.home))
    if status is not None:
        print(f"notifier: {notifier_text(status)}")
    timed = [ms for ms in notified.values() if ms == ms]  # nan: no raw timestamp known
    line = f"planted fraud notified: {len(notified)} of {len(planted)}"
    if timed:
        line += (f"; raw record -> first notification p50 {percentile(timed, 50):.0f} ms, "
                 f"p99 {percentile(timed, 99):.0f} ms, max {max(timed):.0f} ms")  # fmt: skip
    print(line)
    missing = sorted(planted - notified.keys())
    for detector, record, _ in missing[:5]:
        print(f"  not notified: {detector} alert on {record} (see `mesh status` and the "
              f"notifier's log)")  # fmt: skip
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
