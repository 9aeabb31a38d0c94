"""When routing hands over (:mod:`services.ingest.routing_handover`): a raw partition it reads
lost its leader, or every partition it holds has one again.

Looked at from the job's watch loop after the query keeper (:mod:`shared.spark_query_keeper`),
whose last look at the cluster says which partitions have no leader. Only the raw side is handed
over: a records or dead-letter partition without a leader holds routed records in the sink,
and a routed record cannot go to another partition (the detectors' state is per partition), so
then routing waits in the keeper, all of it, until the leader is back.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql.streaming import StreamingQuery

from services.ingest.data_loss import resume_offsets
from services.ingest.handover_marks import Ends, save_mark, settled_ends
from services.ingest.routing_handover import ROUTING, Partition, first_start, hand_over, load
from services.ingest.trigger_mode import await_batch_end
from shared.spark_query_keeper import QueryKeeper, partition_names

ROUTING_QUERY = "ingest-routing"
#: Seconds a raw partition routing reads must have been without a leader before routing hands
#: over without it: a leader election after a lost node (replication 3) leaves partitions
#: without one for a few seconds, which routing rides out as it is.
LOST_AFTER_S = 15.0


class RoutingDegrade:
    """Hands routing over to a checkpoint without the raw partitions that have no leader, and
    back, as their leaders go and come (see the module docstring)."""

    def __init__(
        self,
        checkpoints: Path,
        raw_pattern: str,
        start: Callable[[], StreamingQuery],
        output_ends: Callable[[], Ends | None],
        batch_wait_s: float,
        say: Callable[[str], None],
        starting_offsets: str = "earliest",
        give_up: Callable[[], bool] = lambda: False,
    ) -> None:
        """``start`` starts routing (on the handover it finds); ``output_ends`` reads the routed
        topics' ends for a mark; ``starting_offsets`` is where routing that never ran starts;
        ``give_up`` says the job is stopping (a handover waiting for a batch's end stops
        waiting)."""
        self._checkpoints, self._raw = checkpoints, re.compile(raw_pattern)
        self._start, self._output_ends = start, output_ends
        self._batch_wait_s, self._say, self._give_up = batch_wait_s, say, give_up
        self._first_start = first_start(starting_offsets)
        self._current = load(checkpoints)

    @property
    def _held(self) -> set[Partition]:
        return self._current.held_partitions() if self._current else set()

    def reads(self, topic: str, partition: int) -> bool:
        """Whether routing reads this partition now: a raw one it does not hold."""
        return self._raw.fullmatch(topic) is not None and (topic, partition) not in self._held

    def waiting(self) -> list[str]:
        """The held partitions, for the status file (`mesh status`'s held back)."""
        if not self._held:
            return []
        return [f"{ROUTING_QUERY} holds {partition_names(self._held)} (no leader); routes the "
                "other raw partitions"]  # fmt: skip

    def look(self, keeper: QueryKeeper) -> None:
        """Hand over if what routing should leave out is not what it leaves out now, or raw
        partitions appeared that routing, reading named partitions, would not read (``keeper``
        runs the job's queries and knows the cluster's partitions and leaders)."""
        if not keeper.topics:
            return  # the cluster has not answered yet: nothing is known of its partitions
        needed = keeper.waits_for(ROUTING_QUERY) | keeper.stalled_on(ROUTING_QUERY)
        if any(self._raw.fullmatch(topic) is None for topic, _ in needed):
            return  # a sink partition lacks a leader: nothing to hand over, routing waits
        held = self._held
        lost = {p for p in needed if keeper.leaderless_for(p) >= LOST_AFTER_S}
        leave_out = lost | (held & keeper.leaderless)
        raw_now = {t: sorted(ps) for t, ps in keeper.topics.items() if self._raw.fullmatch(t)}
        if leave_out == held and not (held and self._unread(raw_now)):
            return
        began = time.monotonic()
        query = keeper.queries[ROUTING_QUERY]
        if leave_out - held:
            query.stop()  # its running batch cannot commit without the partition: stop now
        else:  # every partition it reads has a leader: its batch ends on time
            await_batch_end(query, self._batch_wait_s, self._give_up)
            query.stop()
        self._mark()
        self._current = hand_over(self._checkpoints, leave_out, raw_now, self._first_start)
        keeper.replace(ROUTING_QUERY, self._start())
        returned = held - self._held
        took = f"routing handed over in {time.monotonic() - began:.1f} s"
        if returned:
            self._say(f"{took}: {partition_names(returned)} read again from where they were "
                      "left (a leader again)")  # fmt: skip
        if self._held:
            self._say(f"{took}: it holds {partition_names(self._held)} at their offsets (no "
                      "leader) and routes the other raw partitions")  # fmt: skip

    def _unread(self, raw_now: dict[str, list[int]]) -> set[Partition]:
        """Raw partitions of the cluster the running handover neither reads nor holds (a raw
        topic created, or grown, while routing reads named partitions)."""
        known = self._current.partitions() if self._current else set()
        return {(t, n) for t, ps in raw_now.items() for n in ps} - known

    def _mark(self) -> None:
        """Note what the stopped routing may have routed beyond its committed offsets
        (:mod:`services.ingest.handover_marks`)."""
        ends = settled_ends(self._output_ends)
        if ends is None:
            self._say("routing handover: the routed topics' ends could not be read: no mark")
            return
        committed = resume_offsets(self._checkpoints / ROUTING) or {}
        save_mark(self._checkpoints, committed, ends)
