"""Input partitions held back until an output partition has a leader (issue 48: degrade, never
stop).

On a cluster, a topic declared with one replica loses the partitions a dead broker led. A message
to one of them waits in the producer until its delivery timeout, then fails. Before, one such
failure stopped the whole service (an exit, a restart, the same failure again: a loop), and the
records of every partition waited with it. Now only the input partition whose output could not
be delivered waits, *parked*:

* its records since the last commit are not committed, its state is dropped and its consumption
  paused; records of it already fetched are skipped;
* every ``check_every_s`` the service asks the cluster whether the output partitions it waits
  for have a leader again (:func:`shared.kafka.leaders.leaderless`; a changelog partition
  included, which the restore reads);
* then it takes the partition back the way a restart would: state restored from the changelog,
  records from the committed offset. Nothing is lost and nothing counts twice in state; output of
  the replayed records is produced again with the same ids, deduplicated downstream, as after a
  crash.

The services keep their outputs co-partitioned with their input (the detector runtime: records
and alerts share the customer partitioning, a task's changelog partition is its input's; the
notifier: its changelog and the partitions it picks for notifications and dead letters follow the
alerts partition), so one lost output partition holds back one input partition number, not the
service. This class only keeps the books; the service pauses, restores and seeks
(``services/detector_runtime/runner.py``, ``services/notifier/holding.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from shared.kafka.delivery_tracker import OutputPartition
from shared.kafka.leaders import leaderless

log = logging.getLogger(__name__)

#: How often a parked partition's outputs are looked up (one metadata request per look).
CHECK_EVERY_S = 2.0


class Parking:
    """Parked input partition numbers and the output partitions each waits for."""

    def __init__(
        self, check_every_s: float = CHECK_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        #: input partition number -> the output partitions (topic, partition) it waits for
        self.waiting: dict[int, set[OutputPartition]] = {}
        #: parked numbers whose assigned input partitions the service has not paused yet (parked
        #: inside a rebalance callback, before the assignment took effect)
        self.to_pause: set[int] = set()
        self.check_every_s = check_every_s
        self._clock = clock
        self._next_check = 0.0

    def __bool__(self) -> bool:
        return bool(self.waiting)

    def park(self, unreached: dict[int, set[OutputPartition]]) -> list[int]:
        """Park input partition numbers until ``unreached``'s outputs have leaders; returns the
        numbers not parked before."""
        new = sorted(set(unreached) - set(self.waiting))
        for number, outputs in unreached.items():
            self.waiting.setdefault(number, set()).update(outputs)
        self.to_pause.update(new)
        self._next_check = self._clock() + self.check_every_s
        return new

    def restorable(self, client: Any, changelog: str, numbers: Iterable[int]) -> list[int]:
        """Of newly assigned partition numbers, those whose ``changelog`` partition (the same
        number) has a leader, which their restore reads; the others are parked until it has one
        (and paused once their assignment takes effect: :attr:`to_pause`)."""
        wanted = sorted(numbers)
        lost = leaderless(client, [(changelog, number) for number in wanted])
        if lost:
            self.park({number: {(topic, number)} for topic, number in lost})
            log.warning(
                "changelog partition(s) %s have no leader: those partitions wait to be restored",
                ", ".join(f"{t}[{p}]" for t, p in sorted(lost)),
            )
        return [number for number in wanted if (changelog, number) not in lost]

    def forget(self, numbers: Iterable[int]) -> None:
        """Partitions no longer this instance's: their next owner starts from the commit."""
        for number in numbers:
            self.waiting.pop(number, None)
            self.to_pause.discard(number)

    def due(self, also_waiting: bool = False) -> bool:
        """Whether it is time to look at the awaited partitions' leaders again (``also_waiting``:
        something else waits for a leader, the metrics reporter's held partitions)."""
        now = self._clock()
        if not (self.waiting or also_waiting) or now < self._next_check:
            return False
        self._next_check = now + self.check_every_s
        return True

    def awaited(self) -> set[OutputPartition]:
        return {output for outputs in self.waiting.values() for output in outputs}

    def ready(self, leaderless: set[OutputPartition]) -> list[int]:
        """The parked numbers none of whose outputs is in ``leaderless`` (the service forgets them
        once it has taken them back)."""
        return sorted(n for n, outputs in self.waiting.items() if not outputs & leaderless)

    def describe(self, inputs: Iterable[str]) -> tuple[str, ...]:
        """One phrase per parked number, for the status file: ``records.transactions[3] waits
        for alerts[3]``."""
        names = sorted(inputs)
        return tuple(
            f"{'+'.join(f'{topic}[{number}]' for topic in names)} waits for "
            + ", ".join(f"{topic}[{partition}]" for topic, partition in sorted(outputs))
            for number, outputs in sorted(self.waiting.items())
        )


def foreseen(
    lost: set[OutputPartition], numbers: Iterable[int], by_number: Iterable[str]
) -> dict[int, set[OutputPartition]]:
    """Input partition numbers to hold back before any of their output fails: those whose
    co-partitioned output partition (same number, in one of the ``by_number`` topics) is in
    ``lost``. Each lost partition met by an output costs every partition one wait (the commit's
    SLOW_AFTER_S before it purges); holding back at the first purge all the numbers that will
    meet one pays it once."""
    topics = set(by_number)
    waits: dict[int, set[OutputPartition]] = {}
    for number in numbers:
        for topic, partition in lost:
            if partition == number and topic in topics:
                waits.setdefault(number, set()).add((topic, partition))
    return waits
