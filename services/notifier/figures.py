"""What the notifier counts, and where it shows it: its metrics (Dropwizard-style, to the
``metrics`` topic like every instance's) and its status file (``mesh status``, the demo).

Metric names (tags in braces): ``notifier.alerts`` (meter), ``notifier.duplicates``,
``notifier.undecodable``, ``notifier.unrouted`` (counters), ``notifier.attempts{channel,outcome}``
(timer of each attempt), ``notifier.delivered{channel}``, ``notifier.failed{channel}`` (meters),
``notifier.latency{channel}`` (timer: from the alert's admission to its delivery),
``notifier.pending`` (gauge).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared.json_files import write_json_atomic
from shared.metrics import MetricRegistry

#: How often the status file is rewritten while running.
STATUS_EVERY_S = 2.0


class NotifierFigures:
    def __init__(
        self, registry: MetricRegistry, status_file: Path, pending: Callable[[], int]
    ) -> None:
        self.registry = registry
        self.status_file = status_file
        self.started_s = time.time()
        self.alerts = registry.meter("notifier.alerts")
        self.duplicates = registry.counter("notifier.duplicates")
        self.undecodable = registry.counter("notifier.undecodable")
        self.unrouted = registry.counter("notifier.unrouted")
        registry.gauge("notifier.pending", pending)
        self._pending = pending
        self.delivered: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.attempts: Counter[str] = Counter()
        self.last_error: str | None = None
        self.partitions: list[int] = []
        self.breakers: dict[str, str] = {}
        self._written_at = 0.0

    def attempt(self, channel: str, delivered: bool, seconds: float) -> None:
        outcome = "delivered" if delivered else "failed"
        self.attempts[channel] += 1
        timer = self.registry.timer("notifier.attempts", {"channel": channel, "outcome": outcome})
        timer.update_ms(seconds * 1000)

    def finished(self, channel: str, delivered: bool, latency_s: float, error: str | None) -> None:
        """A delivery ended: DELIVERED after ``latency_s`` since admission, or FAILED."""
        if delivered:
            self.delivered[channel] += 1
            self.registry.meter("notifier.delivered", {"channel": channel}).mark()
            self.registry.timer("notifier.latency", {"channel": channel}).update_ms(
                latency_s * 1000
            )
        else:
            self.failed[channel] += 1
            self.registry.meter("notifier.failed", {"channel": channel}).mark()
            self.last_error = f"{channel}: {error}"

    def document(self, instance_id: str, state: str) -> dict[str, Any]:
        return {
            "instance_id": instance_id,
            "state": state,
            "pid": os.getpid(),
            "started_s": self.started_s,
            "written_s": time.time(),
            "partitions": self.partitions,
            "alerts": self.alerts.count,
            "duplicates": self.duplicates.count,
            "undecodable": self.undecodable.count,
            "unrouted": self.unrouted.count,
            "pending": self._pending(),
            "delivered": dict(self.delivered),
            "failed": dict(self.failed),
            "attempts": dict(self.attempts),
            "breakers": self.breakers,
            "last_error": self.last_error,
        }

    def write(self, instance_id: str, state: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._written_at >= STATUS_EVERY_S:
            write_json_atomic(self.status_file, self.document(instance_id, state))
            self._written_at = now
