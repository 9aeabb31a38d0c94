"""What the notifier counts, and where it shows it: its metrics (Dropwizard-style, to the
``metrics`` topic like every instance's) and its status file (``mesh status``, the demo).

Metric names (tags in braces): ``notifier.alerts`` (meter), ``notifier.duplicates``,
``notifier.undecodable``, ``notifier.unrouted`` (counters), ``notifier.attempts{channel,outcome}``
(timer of each attempt), ``notifier.delivered{channel}``, ``notifier.failed{channel}`` (meters),
``notifier.latency{channel}`` (timer: from the alert's admission to its delivery),
``notifier.end_to_end{channel}`` (timer: from the raw record's Kafka timestamp to the delivery),
``notifier.pending`` (gauge).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.notifier.book import DELIVERED, Delivery
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
        #: held-back alerts partitions, each with the output partitions it waits for
        self.waiting: tuple[str, ...] = ()
        self.breakers: dict[str, str] = {}
        self._written_at = 0.0

    def attempt(self, channel: str, delivered: bool, seconds: float) -> None:
        outcome = "delivered" if delivered else "failed"
        self.attempts[channel] += 1
        timer = self.registry.timer("notifier.attempts", {"channel": channel, "outcome": outcome})
        timer.update_ms(seconds * 1000)

    def finished(self, done: Delivery) -> None:
        """A delivery ended, DELIVERED or FAILED."""
        channel = done.channel
        if done.status == DELIVERED:
            self.delivered[channel] += 1
            self.registry.meter("notifier.delivered", {"channel": channel}).mark()
            tags = {"channel": channel}
            self.registry.timer("notifier.latency", tags).update_ms(
                (done.at_s - done.admitted_s) * 1000
            )
            if done.source_ms is not None:
                self.registry.timer("notifier.end_to_end", tags).update_ms(
                    done.at_s * 1000 - done.source_ms
                )
        else:
            self.failed[channel] += 1
            self.registry.meter("notifier.failed", {"channel": channel}).mark()
            self.last_error = f"{channel}: {done.last_error}"

    def _percentiles(self, name: str) -> dict[str, dict[str, float]]:
        """p50/p99 (ms) and count of the timer ``name`` per channel that has one."""
        found = {}
        for channel in sorted(self.delivered):
            stats = self.registry.timer(name, {"channel": channel}).snapshot()
            if stats.count:
                found[channel] = {"p50": stats.p50, "p99": stats.p99, "count": stats.count}
        return found

    def document(self, instance_id: str, state: str) -> dict[str, Any]:
        return {
            "instance_id": instance_id,
            "state": state,
            "pid": os.getpid(),
            "started_s": self.started_s,
            "written_s": time.time(),
            "partitions": self.partitions,
            "waiting": list(self.waiting),
            "alerts": self.alerts.count,
            "duplicates": self.duplicates.count,
            "undecodable": self.undecodable.count,
            "unrouted": self.unrouted.count,
            "pending": self._pending(),
            "delivered": dict(self.delivered),
            "failed": dict(self.failed),
            "attempts": dict(self.attempts),
            #: admission to delivery, and raw record to delivery (recent, per channel)
            "latency_ms": self._percentiles("notifier.latency"),
            "end_to_end_ms": self._percentiles("notifier.end_to_end"),
            "breakers": self.breakers,
            "last_error": self.last_error,
        }

    def write(self, instance_id: str, state: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._written_at >= STATUS_EVERY_S:
            write_json_atomic(self.status_file, self.document(instance_id, state))
            self._written_at = now
