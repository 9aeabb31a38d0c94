"""Raw record -> notification for one run of the e2e scenario: issue 29's third latency aim.

The alerts' own lineage gives raw -> alert; a person is reached later, through the notifier. The
shipped rules (infra/notifier/rules.yaml) send every alert to the audit file, and planted frauds
to the demo webhook receiver too, and each line there carries when it was delivered and when
its raw record reached Kafka. So a run's raw -> notification is read from those two files under
MESH_HOME, each alert's first notification counted once, as ``make demo``'s summary counts it
(:func:`tools.notification_summary.delivered`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tools.notification_summary import delivered, read_lines

#: Where the people at the end of the mesh are, under MESH_HOME.
NOTIFICATION_FILES = ("webhook_receiver/received.jsonl", "notifier/notifications.jsonl")


def notification_ms(lines: Iterable[dict[str, Any]], since_ms: int) -> list[float]:
    """Each alert's first notification, in ms after its raw record reached Kafka, for the raw
    records that reached it at or after ``since_ms`` (one run's feed)."""
    run = [line for line in lines if (line.get("source_ms") or 0) >= since_ms]
    return [ms for ms in delivered(run).values() if ms == ms]  # nan: no raw timestamp


def wait_notified(
    home: Path, since_ms: int, expected: int, quiet_s: float, timeout_s: float
) -> list[float]:
    """The run's raw -> notification times once ``expected`` alerts were notified, or once no
    new one came for ``quiet_s``, or at ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    found: list[float] = []
    grew_at = time.monotonic()
    while True:
        lines = (line for name in NOTIFICATION_FILES for line in read_lines(home / name))
        now = notification_ms(lines, since_ms)
        if len(now) > len(found):
            grew_at = time.monotonic()
        found = now
        quiet = time.monotonic() - grew_at > quiet_s
        if len(found) >= expected or quiet or time.monotonic() > deadline:
            return found
        time.sleep(1.0)
