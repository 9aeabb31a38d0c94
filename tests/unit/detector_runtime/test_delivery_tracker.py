"""Delivery tracking: a batch's offsets are committed only when all its output is acknowledged."""

from __future__ import annotations

from typing import Any

import pytest

from services.detector_runtime.delivery import DeliveryFailed, DeliveryTracker


class _Message:
    def topic(self) -> str:
        return "alerts"


class _Producer:
    """What ``wait`` asks of a producer: flush, and how many messages are still not acked."""

    def __init__(self, unacknowledged: int = 0) -> None:
        self.unacknowledged = unacknowledged

    def flush(self, timeout: float) -> int:
        return self.unacknowledged


def test_counted_messages_must_all_be_acknowledged() -> None:
    tracker = DeliveryTracker()
    tracker.sent()
    tracker.sent()
    tracker(None, _Message())
    with pytest.raises(DeliveryFailed, match="1 message"):
        tracker.wait([_Producer()], timeout_s=0.1)
    tracker(None, _Message())
    tracker.wait([_Producer()], timeout_s=0.1)


def test_an_only_error_producer_is_judged_by_its_flush_and_its_failures() -> None:
    """Changelog updates are not counted one by one: the flush says whether any is left, and
    the only callbacks are failures."""
    tracker = DeliveryTracker()
    tracker.wait([_Producer()], timeout_s=0.1)
    with pytest.raises(DeliveryFailed, match="3 message"):
        tracker.wait([_Producer(unacknowledged=3)], timeout_s=0.1)
    error: Any = "Local: Message timed out"
    tracker.on_error(error, _Message())
    assert tracker.pending == 0
    with pytest.raises(DeliveryFailed, match="refused a message: alerts: Local: Message timed"):
        tracker.wait([_Producer()], timeout_s=0.1)
