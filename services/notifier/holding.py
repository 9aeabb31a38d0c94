"""Alerts partitions the notifier holds back until what they write has a leader again.

On a cluster that lost a broker, a topic declared with one replica loses the partitions that
broker led. Before (issue 48), one notification, book change or dead letter that could not reach
its partition made :meth:`NotifierOutputs.settle` raise, the notifier exited, its supervisor
started it again, and the restore or the first commit failed the same way: no alert of any
partition reached anyone while the broker was away. Now only the alerts partition whose output
waits is held (:mod:`shared.kafka.parking` keeps the books):

* its alerts since the last commit are not committed, its delivery book is dropped, its attempts
  in flight are let go (their outcome is not recorded: the book, restored, has them PENDING and
  sends them again with the same Idempotency-Key), its reading is paused;
* every 2 s one metadata request asks whether its outputs, and its changelog partition (the
  restore reads it), have leaders; then the book is restored from the changelog and the
  partition read again from its committed offset, as a new owner would after a rebalance;
* a partition assigned while its changelog partition has no leader waits the same way instead
  of failing the restore (which would fail inside the rebalance, and the process with it).

The notifier's outputs follow the alerts partition (its changelog by number, notifications and
dead letters by the number modulo their partition count: :mod:`services.notifier.outputs`), so one
lost output partition holds back the alerts partitions that map to it, not the notifier.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from services.notifier.book import DeliveryBook
from shared.kafka.delivery_tracker import OutputPartition
from shared.kafka.leaders import leaderless
from shared.kafka.parking import Parking

log = logging.getLogger(__name__)


class Holding:
    """The held alerts partitions of one notifier instance, and the consumer moves that hold
    and take them back."""

    def __init__(
        self,
        consumer: Any,
        metadata: Any,
        alerts: str,
        changelog: str,
        restore: Callable[[list[int]], dict[int, DeliveryBook]],
    ) -> None:
        """``metadata``: any client to ask for leaders (the outputs' producer); ``restore``:
        the books of these partition numbers as the changelog has them."""
        self._consumer = consumer
        self._metadata = metadata
        self._alerts, self._changelog = alerts, changelog
        self._restore = restore
        self.parking = Parking()

    def hold(self, unreached: dict[int, set[OutputPartition]]) -> list[int]:
        """Hold back these alerts partitions until the outputs each names have a leader;
        returns the numbers not held before (their books and attempts are the caller's to
        drop)."""
        new = self.parking.park(unreached)
        for number in new:
            log.warning(
                "alerts partition %d waits: output to %s could not be delivered (no leader); its "
                "alerts since the last commit are taken again once it has one",
                number,
                ", ".join(f"{t}[{p}]" for t, p in sorted(unreached[number])),
            )
        self.pause_new()
        return new

    def restorable(self, numbers: Iterable[int]) -> list[int]:
        """Of newly assigned partition numbers, those whose changelog partition has a leader;
        the others are held until it has one (paused once the assignment takes effect)."""
        return self.parking.restorable(self._metadata, self._changelog, numbers)

    def pause_new(self) -> None:
        """Pause the held partitions not paused yet: at once when held, and after the next
        ``consume()`` those held in a rebalance callback, before their assignment took effect
        (their alerts fetched meanwhile are skipped: no book takes them)."""
        owned = self._own(self.parking.to_pause)
        if owned:
            self._consumer.pause(owned)
        self.parking.to_pause -= {tp.partition for tp in owned}

    def forget(self, numbers: Iterable[int]) -> None:
        """Partitions revoked: their next owner restores them and starts from the commit."""
        self.parking.forget(numbers)

    def take_back(self) -> dict[int, DeliveryBook]:
        """When it is time to look (every 2 s while something is held): the held partitions
        whose outputs and changelog partition have leaders again, restored, rewound to their
        committed offsets and resumed; their books are returned for the caller to keep."""
        if not self.parking.due():
            return {}
        waiting = set(self.parking.waiting)
        restored_from = {(self._changelog, n) for n in waiting}
        lost = leaderless(self._metadata, self.parking.awaited() | restored_from)
        ready = [n for n in self.parking.ready(lost) if (self._changelog, n) not in lost]
        if not ready:
            return {}
        owned = self._own(set(ready))
        try:
            books = self._restore(sorted(tp.partition for tp in owned)) if owned else {}
            points = self._rewind_points(owned) if owned else []
        except KafkaException as error:  # the cluster moved again meanwhile: the next look retries
            log.warning("could not take back alerts partitions %s yet: %s", ready, error)
            return {}
        self.parking.forget(ready)
        for tp in points:
            self._consumer.seek(tp)
        if owned:
            self._consumer.resume(owned)
            log.info("taken back alerts partitions %s (their outputs have leaders again)",
                     sorted(books))  # fmt: skip
        return books

    def describe(self) -> tuple[str, ...]:
        """One phrase per held partition, for the status file."""
        return self.parking.describe([self._alerts])

    def _own(self, numbers: set[int]) -> list[Any]:
        """The assigned alerts partitions with these numbers."""
        if not numbers:
            return []
        try:
            return [tp for tp in self._consumer.assignment() if tp.partition in numbers]
        except (KafkaException, RuntimeError):
            return []

    def _rewind_points(self, owned: list[Any]) -> list[Any]:
        """Each partition's committed offset; one never committed starts where the consumer's
        reset policy starts it (``earliest``, shared/kafka/config.py)."""
        committed = self._consumer.committed(
            [TopicPartition(tp.topic, tp.partition) for tp in owned], timeout=10
        )
        return [
            TopicPartition(tp.topic, tp.partition,
                           tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
            for tp in committed
        ]  # fmt: skip
