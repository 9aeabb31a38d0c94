"""Delivery tracking: a batch's offsets are committed only when all its output is acknowledged;
output that could not reach its partition (no leader) holds back only its input partition."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError

from shared.kafka.delivery_tracker import DeliveryFailed, DeliveryTracker

TIMED_OUT = KafkaError(KafkaError._MSG_TIMED_OUT)


class _Message:
    def __init__(self, topic: str = "alerts", partition: int = 0) -> None:
        self._topic, self._partition = topic, partition

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition


class _Producer:
    """What ``wait`` asks of a producer: flush, and how many messages are still not acked."""

    def __init__(self, unacknowledged: int = 0) -> None:
        self.unacknowledged = unacknowledged

    def flush(self, timeout: float) -> int:
        return self.unacknowledged


def test_counted_messages_must_all_be_acknowledged() -> None:
    tracker = DeliveryTracker()
    first, second = tracker.for_input(0), tracker.for_input(1)
    tracker.sent()
    tracker.sent()
    first(None, _Message())
    with pytest.raises(DeliveryFailed, match="1 message"):
        tracker.wait([_Producer()], timeout_s=0.1)
    second(None, _Message())
    assert tracker.wait([_Producer()], timeout_s=0.1) == {}


def test_an_only_error_producer_is_judged_by_its_flush_and_its_failures() -> None:
    """Changelog updates are not counted one by one: the flush says whether any is left, and
    the only callbacks are failures."""
    tracker = DeliveryTracker()
    assert tracker.wait([_Producer()], timeout_s=0.1) == {}
    with pytest.raises(DeliveryFailed, match="3 message"):
        tracker.wait([_Producer(unacknowledged=3)], timeout_s=0.1)
    refused: Any = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    tracker.on_error(refused, _Message("velocity.changelog", 2))
    assert tracker.pending == 0
    with pytest.raises(DeliveryFailed, match=r"refused a message: velocity\.changelog"):
        tracker.wait([_Producer()], timeout_s=0.1)


def test_output_without_a_leader_names_the_input_partition_it_came_from() -> None:
    """An alert of input partition 3 that timed out in alerts[5], and a changelog update of task
    6 that timed out: inputs 3 and 6 wait, each for its own output; nothing raises, and the
    next wait starts clean."""
    tracker = DeliveryTracker()
    tracker.sent()
    tracker.for_input(3)(TIMED_OUT, _Message("alerts", 5))
    tracker.on_error(TIMED_OUT, _Message("velocity.changelog", 6))
    assert tracker.wait([_Producer()], timeout_s=0.1) == {
        3: {("alerts", 5)},
        6: {("velocity.changelog", 6)},
    }
    assert tracker.wait([_Producer()], timeout_s=0.1) == {}


def test_a_slow_flush_asks_once_whether_to_stop_waiting() -> None:
    """Output still unacknowledged after ``slow_after_s``: ``when_slow`` runs once (the runner
    purges what is queued when a partition has no leader), then the wait goes on to its end;
    purged messages name their input partitions like timed-out ones."""
    tracker = DeliveryTracker()
    alert = tracker.for_input(4)
    tracker.sent()

    producer = _Producer(unacknowledged=1)
    asked: list[int] = []

    def purge() -> None:
        asked.append(1)
        producer.unacknowledged = 0
        alert(KafkaError(KafkaError._PURGE_QUEUE), _Message("alerts", 4))

    assert tracker.wait([producer], 1.0, purge, slow_after_s=0.0) == {4: {("alerts", 4)}}
    assert asked == [1]
    assert tracker.wait([producer], 1.0, purge, slow_after_s=0.0) == {}
    assert asked == [1], "nothing slow, nothing asked"


def test_a_refusal_is_raised_once_and_failures_for_a_leader_can_be_taken_between_waits() -> None:
    """The notifier goes on after a revoke's failed wait (the next owner retries), so a refusal
    must not fail its every later wait; and it polls between commits, so it learns of a record
    that found no leader before its next wait (``take_unreached``)."""
    tracker = DeliveryTracker()
    tracker.sent()
    tracker.for_input(3)(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE), _Message("notifications", 3))
    with pytest.raises(DeliveryFailed, match="refused"):
        tracker.wait([_Producer()], timeout_s=0.1)
    assert tracker.wait([_Producer()], timeout_s=0.1) == {}
    tracker.sent()
    tracker.for_input(5)(TIMED_OUT, _Message("notifications", 1))
    assert tracker.take_unreached() == {5: {("notifications", 1)}}
    assert tracker.take_unreached() == {}
    assert tracker.wait([_Producer()], timeout_s=0.1) == {}
