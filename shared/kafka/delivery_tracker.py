"""Producer-side bookkeeping: count what the broker acknowledged, what waited for a leader in
vain, and what it refused.

A service that commits input offsets only once everything it wrote for them is acknowledged (the
detector runtime: alerts, changelog updates, dead letters; the notifier: notifications, its
delivery book's changelog, dead letters) learns here whether it may, per *input* partition.

Two kinds of failure, two answers (issue 48, "degrade, never stop"):

* A message that could not reach its partition's leader before the producer's delivery timeout
  (the partition has no leader: a topic with one replica on a cluster that lost the broker
  holding it) concerns one input partition: each message is produced with a callback that knows
  which (:meth:`DeliveryTracker.for_input`), or, for a producer that reports errors only, its own
  partition number is its input partition's (a changelog co-partitioned with the input,
  :meth:`DeliveryTracker.on_error`). :meth:`DeliveryTracker.wait` returns those input partitions
  with the output partitions they wait for; the service holds them back (:mod:`parking`) and
  commits the others.
* Waiting out the delivery timeout would hold every partition for it, once: so a wait whose
  output is still unacknowledged after SLOW_AFTER_S calls the service back, which asks whether an
  output partition has no leader and, if one has none, fails what is still queued
  (``Producer.purge``: those messages were never sent). Their input partitions are held like the
  others; those whose output partitions do have leaders are taken back at the next look (2 s),
  replayed from their commit.
* Anything else (the broker refused the message: too large, not authorised, a fatal producer
  error) raises DeliveryFailed, as before: the service exits without committing, and the records
  are processed again after the restart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from shared.kafka.leaders import waited_for_a_leader

#: How long a commit waits for its output before it asks whether an output partition lost its
#: leader (a healthy cluster acknowledges in milliseconds; a leader election takes ~5-10 s).
SLOW_AFTER_S = 5.0

#: output partitions as (topic, partition)
OutputPartition = tuple[str, int]


class DeliveryFailed(Exception):
    """The broker did not acknowledge a message; the batch must not be committed."""


class DeliveryTracker:
    __slots__ = ("first_error", "pending", "unreached")

    def __init__(self) -> None:
        self.pending = 0
        self.first_error: str | None = None
        #: input partition number -> the output partitions its messages could not reach
        self.unreached: dict[int, set[OutputPartition]] = {}

    def sent(self) -> None:
        self.pending += 1

    def for_input(self, partition: int) -> Callable[[Any, Any], None]:
        """confluent-kafka ``on_delivery`` callback for one message (an alert or a dead letter)
        produced for a record of input partition ``partition``."""

        def delivered(err: Any, msg: Any) -> None:
            self.pending -= 1
            if err is not None:
                self._failed(partition, err, msg)

        return delivered

    def on_error(self, err: Any, msg: Any) -> None:
        """``on_delivery`` for the changelog producer, which has ``delivery.report.only.error``:
        it reports failures only, so its messages are not counted in :attr:`pending`;
        :meth:`wait`'s flush says whether they are all acknowledged (a Python call per
        acknowledged changelog update cost the stateful runtime ~1 µs a record). A changelog
        partition is its task's input partition number."""
        if err is not None:
            self._failed(msg.partition(), err, msg)

    def _failed(self, partition: int, err: Any, msg: Any) -> None:
        if waited_for_a_leader(err):
            self.unreached.setdefault(partition, set()).add((msg.topic(), msg.partition()))
        elif self.first_error is None:
            self.first_error = f"{msg.topic()}: {err}"

    def wait(
        self,
        producers: Sequence[Any],
        timeout_s: float,
        when_slow: Callable[[], None] | None = None,
        slow_after_s: float = SLOW_AFTER_S,
    ) -> dict[int, set[OutputPartition]]:
        """Block until every message sent so far (through any of ``producers``) is acknowledged
        or has failed; returns the input partitions whose output could not reach its partition
        (and forgets them), or raises DeliveryFailed for a refused or unsettled message.

        ``when_slow`` is called once if messages are still unacknowledged after
        ``slow_after_s``: the service looks for an output partition without a leader there and,
        if one has none, fails what is still queued at once (``Producer.purge``) instead of
        letting every partition wait out the delivery timeout (see the module docstring)."""
        started = time.monotonic()
        deadline = started + timeout_s
        remaining = _flush(producers, min(deadline, started + slow_after_s))
        if remaining:
            if when_slow is not None:
                when_slow()
            remaining = _flush(producers, deadline)
        if self.first_error is not None:
            refused, self.first_error = self.first_error, None  # said once: a caller may go on
            raise DeliveryFailed(f"the broker refused a message: {refused}")
        if remaining or self.pending:
            raise DeliveryFailed(
                f"{max(remaining, self.pending)} message(s) not acknowledged within {timeout_s} s"
            )
        return self.take_unreached()

    def take_unreached(self) -> dict[int, set[OutputPartition]]:
        """The input partitions whose output failed for want of a leader since the last call,
        with the output partitions each waits for (delivery reports come in ``poll`` and
        ``flush``: a caller that polls between commits learns of them before its next wait)."""
        unreached, self.unreached = self.unreached, {}
        return unreached


def _flush(producers: Sequence[Any], deadline: float) -> int:
    """Flush every producer until ``deadline`` (monotonic); the messages still unsettled."""
    return sum(p.flush(max(0.0, deadline - time.monotonic())) for p in producers)
