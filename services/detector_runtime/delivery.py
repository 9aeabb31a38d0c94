"""Producer-side bookkeeping: count what the broker acknowledged, what waited for a leader in
vain, and what it refused.

The runtime commits input offsets only when every alert, changelog update and dead letter of the
records they cover has been acknowledged; this tracker is how it knows, across the runtime's two
producers (alerts at once; state and metrics batched up to a commit).

Two kinds of failure, two answers (issue 48, "degrade, never stop"):

* A message that could not reach its partition's leader before the producer's delivery timeout
  (the partition has no leader: a topic with one replica on a cluster that lost the broker
  holding it) concerns one *input* partition: alerts and dead letters are tracked per input
  partition (a callback per message that knows it; they are rare), and a changelog partition *is*
  its task's input partition number. :meth:`DeliveryTracker.wait` returns those input partitions
  with the output partitions they wait for; the runner parks them (:mod:`parking`) and commits the
  others.
* Waiting out the delivery timeout would hold every partition for it, once: so a commit whose
  output is still unacknowledged after SLOW_AFTER_S asks whether an output partition has no
  leader, and if one has none, fails what is still queued (``Producer.purge``: those messages
  were never sent). Their input partitions are parked like the others; those whose output
  partitions do have leaders are taken back at the next look (2 s), replayed from their commit.
* Anything else (the broker refused the message: too large, not authorised, a fatal producer
  error) is fatal, as before: the process exits without committing, and the records are processed
  again after the restart.
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
        ``slow_after_s``: the runner looks for an output partition without a leader there and,
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
            raise DeliveryFailed(f"the broker refused a message: {self.first_error}")
        if remaining or self.pending:
            raise DeliveryFailed(
                f"{max(remaining, self.pending)} message(s) not acknowledged within {timeout_s} s"
            )
        unreached, self.unreached = self.unreached, {}
        return unreached


def _flush(producers: Sequence[Any], deadline: float) -> int:
    """Flush every producer until ``deadline`` (monotonic); the messages still unsettled."""
    return sum(p.flush(max(0.0, deadline - time.monotonic())) for p in producers)
