"""What a killed ingest job's restart may route again: exactly the records it had routed beyond
the offsets its routing checkpoint had committed when it died.

A restart reads on from the newest batch whose commit and offsets are both in the checkpoint
(:mod:`shared.spark_checkpoint`); everything below those offsets was routed and flushed before
the commit was written, so routing it again would be a bug. A bound in time or records (one
checkpoint interval at the feed's rate) is only a proxy for this, and a loose one on a busy
machine: a batch that catches up a backlog routes more than the feed's rate in its interval, and
a slow hand-over makes the uncommitted batch longer. The mark is read once the job is dead and
before its restart routes anything, so the sets compared are exact whatever the load.

The kill's replays are the records routed before the mark and again after it; duplicates from
an earlier graceful stop (both routings before the mark) are left to that stop's own check.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from services.ingest.handover_marks import load_marks, settled_ends
from shared.avro import AvroDeserializer
from shared.lineage import SOURCE_HEADER
from shared.spark_checkpoint import committed_kafka_offsets


class Routing(NamedTuple):
    """One routed copy of a raw record: its source (``topic:partition:offset``) and where the
    copy sits in the outputs."""

    source: str
    topic: str
    partition: int
    offset: int


def routing_of(message: Any, invalid_topic: str, decode_invalid: AvroDeserializer) -> Routing:
    """The routed copy ``message`` (a confluent-kafka message of a records topic or of
    ``invalid_topic``) is: a routed record names its source in a header, a dead letter in its
    fields (``decode_invalid``: an ``invalid_record`` deserializer)."""
    if message.topic() == invalid_topic:
        dead = decode_invalid.decode(message.value())
        where = f"{dead['source_topic']}:{dead['source_partition']}:{dead['source_offset']}"
    else:
        where = next(v.decode() for k, v in message.headers() if k == SOURCE_HEADER)
    return Routing(where, message.topic(), message.partition(), message.offset())


@dataclass(frozen=True)
class KillMark:
    """The routing checkpoint's committed offsets and the outputs' ends at a kill."""

    #: raw topic -> partition -> next offset the restart reads (empty: nothing committed)
    committed: dict[str, dict[int, int]]
    #: (output topic, partition) -> high watermark once the killed job's writes had landed
    outputs: dict[tuple[str, int], int]

    def before(self, routing: Routing) -> bool:
        """The copy was written by the killed job (below the outputs' ends at the kill)."""
        return routing.offset < self.outputs.get((routing.topic, routing.partition), 0)

    def uncommitted(self, source: str) -> bool:
        """The raw record lies beyond what the checkpoint had committed."""
        topic, partition, offset = source.rsplit(":", 2)
        return int(offset) >= self.committed.get(topic, {}).get(int(partition), 0)


def read_mark(
    routing_checkpoint: Path,
    output_ends: Callable[[], dict[tuple[str, int], int]],
    settle_s: float = 1.0,
) -> KillMark:
    """The mark of a job just killed: its checkpoint's committed offsets, and the outputs' ends
    read until two reads ``settle_s`` apart agree (a produce request the dead JVM had sent may
    still be appended; its restart takes far longer than that to route anything)."""
    committed = committed_kafka_offsets(routing_checkpoint) or {}
    ends = settled_ends(output_ends, settle_s) or {}
    return KillMark(committed, ends)


def handover_marks(checkpoints: Path) -> list[KillMark]:
    """The mark of each routing handover of the ingest job checkpointing under ``checkpoints``
    (:mod:`services.ingest.handover_marks`): a handover that stops a batch leaves what it had
    routed beyond its committed offsets to be routed again, as a kill does."""
    return [KillMark(mark.committed, mark.outputs) for mark in load_marks(checkpoints)]


class ReplayVerdict(NamedTuple):
    #: records the killed job routed beyond its committed offsets: what a restart may repeat
    replayable: int
    #: records routed before the kill and again after it
    replayed: int
    #: a line for each breach (a committed record routed again, a record routed thrice)
    failures: list[str]


def replay_verdict(mark: KillMark, routings: list[Routing]) -> ReplayVerdict:
    """Whether the restart repeated only what the checkpoint had not committed, once each."""
    before = {r.source for r in routings if mark.before(r)}
    after = {r.source for r in routings if not mark.before(r)}
    replayable = {s for s in before if mark.uncommitted(s)}
    replayed = before & after
    failures = []
    committed_again = sorted(replayed - replayable)
    if committed_again:
        failures.append(
            f"{len(committed_again)} records routed again after the kill though their batch "
            f"was committed before it, e.g. {committed_again[0]}"
        )
    copies_after = Counter(r.source for r in routings if not mark.before(r))
    repeated = sorted(s for s in replayed if copies_after[s] > 1)
    if repeated:
        failures.append(
            f"{len(repeated)} records routed more than once after the kill, e.g. {repeated[0]}"
        )
    return ReplayVerdict(len(replayable), len(replayed), failures)
