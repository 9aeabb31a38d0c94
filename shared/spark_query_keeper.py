"""A Spark job's streaming queries kept running through what they cannot help: a partition of
their topics without a leader (issue 48).

Spark's Kafka source asks for the latest offset of every partition it reads before each
batch, and fails the query after ~63 s when one has no leader; its sink fails a task whose record
waited ``delivery.timeout.ms`` for one (docs/reliability.md). Either failure used to end the job,
and its supervisor started it again, and again, for as long as the partition had no leader: the
issue's ingest restarted 13 times, the metrics aggregator 8. Here a query that stops while a
partition it reads or writes has, or lately had, no leader is not a failure of the job: it
waits, the job's other queries go on, the job says which partitions it waits for
(:meth:`QueryKeeper.waiting`, shown by `mesh status`), and the query is started again from its
checkpoint once each of them has a leader (nothing is skipped: its offsets are where it
stopped). Any other stop ends the job as before, so a real bug is not hidden behind a wait.

What this cannot give with Spark's connector: one query reads every partition of its topics, so
while it waits the records of its partitions that have a leader wait too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.streaming import StreamingQuery

from shared.kafka.leaders import TopicPartitionKey, leaders_by_topic, offline_in

#: Seconds between two looks at the cluster's leaders (one metadata request).
LOOK_S = 2.0
#: A query that stops up to this long after a partition of its topics was last seen without a
#: leader stopped for it: the source gives up ~63 s after the leader went, the sink 120 s after
#: its record was sent, and the leader may be back by the time the stop is seen.
LEADERLESS_MEMORY_S = 180.0


def partition_names(partitions: Iterable[TopicPartitionKey]) -> str:
    """``raw.transactions[3], records.transactions[3]``: how the status names partitions."""
    return ", ".join(f"{topic}[{n}]" for topic, n in sorted(partitions))


#: Whether a query reads or writes a partition (topic, partition number).
Uses = Callable[[str, int], bool]


@dataclass
class _Kept:
    start: Callable[[], StreamingQuery]
    uses: Uses
    query: StreamingQuery
    #: the partitions a stopped query waits for (empty: it runs)
    waits_for: set[TopicPartitionKey] = field(default_factory=set)


class QueryKeeper:
    """The job's queries by name, each with how to start it and which partitions it reads and
    writes (``uses``: patterns resolve against the metadata). :meth:`look` is called from the
    job's watch loop."""

    def __init__(
        self,
        starters: Mapping[str, Callable[[], StreamingQuery]],
        uses: Mapping[str, Uses],
        client: Any,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kept = {name: _Kept(start, uses[name], start()) for name, start in starters.items()}
        self._client, self._say, self._clock = client, say, clock
        #: partition -> when it was last seen without a leader (the last LEADERLESS_MEMORY_S)
        self._leaderless_at: dict[TopicPartitionKey, float] = {}
        #: partition without a leader at the last look -> since when, without a break
        self._leaderless_since: dict[TopicPartitionKey, float] = {}
        #: the cluster's topics -> partition -> leader at the last answered look
        self._found: dict[str, dict[int, int]] = {}
        self._next_look = 0.0

    @property
    def queries(self) -> dict[str, StreamingQuery]:
        """Each query's current run (a restarted query is a new object)."""
        return {name: kept.query for name, kept in self._kept.items()}

    @property
    def leaderless(self) -> set[TopicPartitionKey]:
        """The partitions without a leader at the last look at the cluster."""
        return set(self._leaderless_since)

    def leaderless_for(self, partition: TopicPartitionKey) -> float:
        """Seconds ``partition`` has been without a leader, look after look (0: it has one)."""
        since = self._leaderless_since.get(partition)
        return 0.0 if since is None else self._clock() - since

    @property
    def topics(self) -> dict[str, dict[int, int]]:
        """Each topic's partitions and their leader (-1: none) at the last answered look."""
        return self._found

    def waits_for(self, name: str) -> set[TopicPartitionKey]:
        """What the stopped query ``name`` waits for (empty: it is not waiting)."""
        return set(self._kept[name].waits_for)

    def stalled_on(self, name: str) -> set[TopicPartitionKey]:
        """The partitions ``name`` needs that had no leader at the last look."""
        return self._needed(self._kept[name], set(self._leaderless_since))

    def replace(self, name: str, query: StreamingQuery) -> None:
        """``query`` is ``name``'s run from now on (started by the job itself): no longer
        waiting."""
        kept = self._kept[name]
        kept.query, kept.waits_for = query, set()

    def look(self) -> str | None:
        """One round: queries that stopped are started again, held, or (any other stop) named
        as the job's failure, which is returned; waiting ones are started again once every
        partition they wait for has a leader."""
        now = self._clock()
        if now >= self._next_look:
            self._next_look = now + LOOK_S
            self._look_at_leaders(now)
        for name, kept in self._kept.items():
            if kept.waits_for or kept.query.isActive:
                continue
            failure = self._stopped(name, kept, now)
            if failure:
                return failure
        return None

    def waiting(self) -> list[str]:
        """What the queries wait for now, one line each (`mesh status` prints them under the
        job): a stopped query that waits for leaders, and a running one whose batches stall on
        a partition without a leader (its source will give up and stop it)."""
        lines = []
        for name, kept in self._kept.items():
            if kept.waits_for:
                lines.append(f"{name} waits for {partition_names(kept.waits_for)}")
                continue
            stalled = self._needed(kept, set(self._leaderless_since))
            if stalled:
                lines.append(f"{name} stalls: no leader for {partition_names(stalled)}")
        return lines

    def _stopped(self, name: str, kept: _Kept, now: float) -> str | None:
        error = kept.query.exception()
        reason = str(error).strip().splitlines()[0] if error else "no error given"
        lately = {p for p, at in self._leaderless_at.items() if now - at <= LEADERLESS_MEMORY_S}
        lost = self._needed(kept, lately)
        if not lost:
            return f"query {name} stopped: {reason}"
        kept.waits_for = lost
        self._say(f"query {name} stopped ({reason[:200]}); {partition_names(lost)} had no "
                  "leader: it waits for them and starts again from its checkpoint, the other "
                  "queries go on")  # fmt: skip
        self._next_look = now  # the leader may be back already
        return None

    def _look_at_leaders(self, now: float) -> None:
        found = leaders_by_topic(self._client)
        if found is None:  # no answer: says nothing about leaders
            return
        self._found = found
        leaderless = offline_in(found, found)
        self._leaderless_since = {p: self._leaderless_since.get(p, now) for p in leaderless}
        recent = {p: at for p, at in self._leaderless_at.items() if now - at <= LEADERLESS_MEMORY_S}
        self._leaderless_at = recent | dict.fromkeys(leaderless, now)
        for name, kept in self._kept.items():
            if not kept.waits_for:
                continue
            kept.waits_for = self._needed(kept, leaderless) or _still_unknown(kept, found)
            if kept.waits_for:
                continue
            self._say(f"query {name}: every partition it waits for has a leader again: "
                      "starting it from its checkpoint")  # fmt: skip
            kept.query = kept.start()

    @staticmethod
    def _needed(kept: _Kept, partitions: set[TopicPartitionKey]) -> set[TopicPartitionKey]:
        return {(topic, n) for topic, n in partitions if kept.uses(topic, n)}


def _still_unknown(kept: _Kept, found: dict[str, dict[int, int]]) -> set[TopicPartitionKey]:
    """The partitions ``kept`` waits for that the metadata no longer lists at all (a topic
    being recreated): still waited for, rather than started against a topic that is not
    there."""
    return {(topic, n) for topic, n in kept.waits_for if n not in found.get(topic, {})}
