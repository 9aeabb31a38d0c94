"""Raw records removed by retention before ingest read them: found at start, reported, never silent.

Ingest's Kafka sources resume from their checkpoints. When the job was stopped (or far behind)
for longer than a raw topic's retention, the broker has deleted records the checkpoint still
points at. Spark's Kafka source then either fails the query (``failOnDataLoss=true``) or, as
ingest runs it, skips to the earliest record there is with no more than a WARN line in the JVM's
log: the records are gone, and nobody hears of it (seed 003's "where did Tuesday go?").

So before its queries start, the job compares where each query will resume (the offsets of its
last committed batch, or of its very first start) with the earliest offset each raw partition
still has. Every gap is a :class:`SkippedRange`; what happens next is ``MESH_INGEST_ON_DATA_LOSS``:

* ``report`` (the default): one line per range on stderr and in the ingest status file (`mesh
  status` shows it), the ``ingest.records.skipped`` counter, and the job goes on;
* ``fail``: the job refuses to start with the ranges in its one-line error (and its sources run
  with ``failOnDataLoss=true``, so a loss while running stops routing too). To go on past the
  loss, an operator sets ``report`` for one start.

What is checked is the stop-to-start gap. A loss while the job runs (a raw partition that retention
empties faster than ingest reads it) shows in the ``consumer.lag`` gauge long before it happens;
Spark's source skips it, and in ``fail`` mode stops the query.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from shared.errors import MeshError

log = logging.getLogger(__name__)

#: A partition whose leader is gone (a lost broker): judged at the next start, not now.
_NO_LEADER = {KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
              KafkaError.REPLICA_NOT_AVAILABLE}  # fmt: skip

#: What MESH_INGEST_ON_DATA_LOSS may say.
REPORT, FAIL = "report", "fail"
ON_DATA_LOSS = (REPORT, FAIL)

#: topic -> partition -> offset, as Spark's Kafka source writes them in a checkpoint.
Offsets = dict[str, dict[int, int]]


class DataLossError(MeshError):
    """Raw records were removed before ingest read them, and the job was told to stop on it."""


@dataclass(frozen=True)
class SkippedRange:
    """Offsets ``first`` to ``end - 1`` of a raw partition, which ``query`` will never read."""

    query: str
    topic: str
    partition: int
    first: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.first

    def line(self) -> str:
        return (f"{self.query} skips offsets {self.first}-{self.end - 1} of "
                f"{self.topic}[{self.partition}] ({self.count} records removed by retention "
                "before ingest read them)")  # fmt: skip

    def as_json(self) -> dict[str, object]:
        return {"query": self.query, "topic": self.topic, "partition": self.partition,
                "first": self.first, "end": self.end, "count": self.count}  # fmt: skip


def resume_offsets(checkpoint: Path) -> Offsets | None:
    """Where a query with this checkpoint folder reads next on its start: the end offsets of its
    last committed batch (a batch begun but not committed is run again from there), else the
    offsets its first start chose. None for a query that has never started."""
    commits = set(_batch_ids(checkpoint / "commits")) & set(_batch_ids(checkpoint / "offsets"))
    if commits:
        return _offsets_in(checkpoint / "offsets" / str(max(commits)))
    initial = checkpoint / "sources" / "0" / "0"
    return _offsets_in(initial) if initial.is_file() else None


def skipped_ranges(
    query: str, resume: Offsets, earliest: Mapping[tuple[str, int], int]
) -> list[SkippedRange]:
    """The ranges ``query`` skips when it resumes at ``resume`` and each partition's records now
    begin at ``earliest`` (a partition missing from ``earliest`` is not judged: its topic is gone,
    which is another fault)."""
    found = []
    for topic, partitions in sorted(resume.items()):
        for partition, offset in sorted(partitions.items()):
            start = earliest.get((topic, partition))
            if start is not None and offset >= 0 and start > offset:
                found.append(SkippedRange(query, topic, partition, offset, start))
    return found


def query_checkpoints(checkpoints: Path) -> dict[str, Path]:
    """Each query's checkpoint folder under the job's checkpoint root, by folder name."""
    if not checkpoints.is_dir():
        return {}
    return {p.name: p for p in sorted(checkpoints.iterdir()) if (p / "offsets").is_dir()}


def summary(ranges: Iterable[SkippedRange]) -> str:
    """``1200 raw records skipped: routing skips offsets ...; ...`` (at most three ranges)."""
    ranges = list(ranges)
    shown = "; ".join(r.line() for r in ranges[:3])
    more = f"; and {len(ranges) - 3} more ranges" if len(ranges) > 3 else ""
    routing = sum(r.count for r in ranges if r.query == "routing")
    total = routing or sum(r.count for r in ranges)
    return f"{total} raw records skipped: {shown}{more}"


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return [int(p.name) for p in folder.iterdir() if p.name.isdigit()]


def _offsets_in(path: Path) -> Offsets | None:
    """The Kafka source offsets of a checkpoint log file: its JSON lines that map topics to
    partition offsets (the file also holds a version line and the batch's metadata)."""
    found: Offsets = {}
    for line in path.read_text(errors="replace").splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            document = json.loads(line[start:])
        except ValueError:
            continue
        for topic, partitions in document.items():
            if (
                isinstance(partitions, dict)
                and partitions
                and all(k.isdigit() and isinstance(v, int) for k, v in partitions.items())
            ):
                found[topic] = {int(k): v for k, v in partitions.items()}
    return found or None


def earliest_offsets(
    admin_settings: Mapping[str, Any], partitions: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """The first offset each raw partition still holds (its log start offset, which retention
    moves), asked of the cluster in one request; partitions of topics gone are left out."""

    wanted = {TopicPartition(t, p): OffsetSpec.earliest() for t, p in partitions}
    if not wanted:
        return {}
    admin = AdminClient(dict(admin_settings))
    found = {}
    for partition, future in admin.list_offsets(wanted, request_timeout=15).items():
        try:
            found[(partition.topic, partition.partition)] = future.result().offset
        except KafkaException as error:
            if error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue  # the topic is gone: another fault, which Spark's source reports
            if error.args[0].code() in _NO_LEADER:
                # A lost broker held its only in-sync replica: only that partition waits (a
                # check that stopped the job here stopped every other partition too, issue 48).
                log.warning("%s[%d] has no leader now: its data-loss check is skipped this "
                            "start", partition.topic, partition.partition)  # fmt: skip
                continue
            raise MeshError(
                f"could not check the raw topics for data loss: {error.args[0].str()}"
            ) from None
    return found


def find_skipped(checkpoints: Path, admin_settings: Mapping[str, Any]) -> list[SkippedRange]:
    """Every range a query under ``checkpoints`` would skip if it started now."""
    resumes = {
        name: resume_offsets(folder) for name, folder in query_checkpoints(checkpoints).items()
    }
    resumes = {name: offsets for name, offsets in resumes.items() if offsets}
    partitions = {(t, p) for offsets in resumes.values() for t, ps in offsets.items() for p in ps}
    earliest = earliest_offsets(admin_settings, partitions)
    found = [
        r for name, offsets in resumes.items() for r in skipped_ranges(name, offsets, earliest)
    ]
    return sorted(found, key=lambda r: r.query != "routing")  # routing's first: what matters most
