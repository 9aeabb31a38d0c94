"""Producer-side bookkeeping: count what the broker acknowledged and what it refused.

The runtime commits input offsets only when every alert, changelog update and dead letter of the
records they cover has been acknowledged; this tracker is how it knows, across the runtime's two
producers (alerts at once; state and metrics batched up to a commit). A delivery failure (after
librdkafka's own retries, which the idempotent producer makes safe) is fatal: the process exits
without committing, and the records are processed again after the restart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any


class DeliveryFailed(Exception):
    """The broker did not acknowledge a message; the batch must not be committed."""


class DeliveryTracker:
    __slots__ = ("first_error", "pending")

    def __init__(self) -> None:
        self.pending = 0
        self.first_error: str | None = None

    def sent(self) -> None:
        self.pending += 1

    def __call__(self, err: Any, msg: Any) -> None:
        """confluent-kafka ``on_delivery`` callback."""
        self.pending -= 1
        if err is not None and self.first_error is None:
            self.first_error = f"{msg.topic()}: {err}"

    def on_error(self, err: Any, msg: Any) -> None:
        """``on_delivery`` for a producer with ``delivery.report.only.error``: it reports
        failures only, so its messages are not counted in :attr:`pending`; :meth:`wait`'s flush
        says whether they are all acknowledged (a Python call per acknowledged changelog update
        cost the stateful runtime ~1 µs a record)."""
        if err is not None and self.first_error is None:
            self.first_error = f"{msg.topic()}: {err}"

    def wait(self, producers: Sequence[Any], timeout_s: float) -> None:
        """Block until every message sent so far (through any of ``producers``) is
        acknowledged, or raise DeliveryFailed."""
        deadline = time.monotonic() + timeout_s
        remaining = sum(p.flush(max(0.0, deadline - time.monotonic())) for p in producers)
        if self.first_error is not None:
            raise DeliveryFailed(f"the broker refused a message: {self.first_error}")
        if remaining or self.pending:
            raise DeliveryFailed(
                f"{max(remaining, self.pending)} message(s) not acknowledged within {timeout_s} s"
            )
