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
from services.ingest.routing_handover import ROUTING, Partition, hand_over, load
from shared.kafka.leaders import leaders_by_topic
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
        client: object,
        checkpoints: Path,
        raw_pattern: str,
        start: Callable[[], StreamingQuery],
        output_ends: Callable[[], Ends | None],
        batch_wait_s: float,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client, self._checkpoints = client, checkpoints
        self._raw = re.compile(raw_pattern)
        self._start, self._output_ends = start, output_ends
        self._batch_wait_s, self._say, self._clock = batch_wait_s, say, clock
        #: raw partitions routing needs, and since when each has had no leader
        self._leaderless_since: dict[Partition, float] = {}
        current = load(checkpoints)
        self._held: set[Partition] = current.held_partitions() if current else set()

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
        """Hand over if what routing should leave out is not what it leaves out now (``keeper``
        runs the job's queries and knows the partitions without a leader)."""
        needed = keeper.waits_for(ROUTING_QUERY) | keeper.stalled_on(ROUTING_QUERY)
        now = self._clock()
        self._leaderless_since = {p: self._leaderless_since.get(p, now) for p in needed}
        if any(self._raw.fullmatch(topic) is None for topic, _ in needed):
            return  # a sink partition lacks a leader: nothing to hand over, routing waits
        lost = {p for p, since in self._leaderless_since.items() if now - since >= LOST_AFTER_S}
        leave_out = lost | (self._held & keeper.leaderless)
        if leave_out == self._held:
            return
        found = leaders_by_topic(self._client)
        if found is None:
            return  # no metadata now: the next look tries again
        raw_now = {t: sorted(ps) for t, ps in found.items() if self._raw.fullmatch(t)}
        began = time.monotonic()
        query = keeper.queries[ROUTING_QUERY]
        if leave_out - self._held:
            query.stop()  # its running batch cannot commit without the partition: stop now
        else:
            self._stop_between_batches(query)
        self._mark()
        handover = hand_over(self._checkpoints, leave_out, raw_now)
        returned, self._held = self._held - handover.held_partitions(), handover.held_partitions()
        keeper.replace(ROUTING_QUERY, self._start())
        took = f"routing handed over in {time.monotonic() - began:.1f} s"
        if returned:
            self._say(f"{took}: {partition_names(returned)} read again from where they were "
                      "left (a leader again)")  # fmt: skip
        if self._held:
            self._say(f"{took}: it holds {partition_names(self._held)} at their offsets (no "
                      "leader) and routes the other raw partitions")  # fmt: skip

    def _mark(self) -> None:
        """Note what the stopped routing may have routed beyond its committed offsets
        (:mod:`services.ingest.handover_marks`)."""
        ends = settled_ends(self._output_ends)
        if ends is None:
            self._say("routing handover: the routed topics' ends could not be read: no mark")
            return
        committed = resume_offsets(self._checkpoints / ROUTING) or {}
        save_mark(self._checkpoints, committed, ends)

    def _stop_between_batches(self, query: StreamingQuery) -> None:
        """Stop routing as its running batch commits (all raw partitions have a leader: a
        batch ends on time), so that next to nothing routed is left uncommitted; bounded by
        ``batch_wait_s``."""
        if not query.isActive:
            return
        finished = (query.lastProgress or {}).get("batchId")
        deadline = time.monotonic() + self._batch_wait_s
        while query.isActive and time.monotonic() < deadline:
            if (query.lastProgress or {}).get("batchId") != finished:
                break
            time.sleep(0.2)
        query.stop()
