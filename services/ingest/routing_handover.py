"""Routing goes on without a raw partition that lost its leader, and takes it back where it left
it once the partition has one again (issue 48: degrade, never stop).

Spark's Kafka source asks for the latest offset of every partition it reads before each batch;
one raw partition without a leader (a one-replica raw topic on a cluster that lost the node) made
that call fail the routing query after ~63 s, and while the query waited for the leader, the
records of every other raw partition waited too. No source option leaves a partition out, and a
checkpointed query restarted without one, then with it again, reads it from its earliest offset:
every retained record of it routed twice.

So routing hands over to a new checkpoint instead, the only way the source takes exact start
offsets. A *handover* stops routing between batches, writes where each raw partition stands (the
last committed batch's end offsets) into ``routing.handover.json``, moves the old checkpoint
aside (``routing.replaced/<n>``, the newest few kept) and starts routing on a fresh checkpoint
from exactly those offsets: the lost partitions left out (``assign``) and *held* at their offsets,
or, once each has a leader again, taken back at them (the usual ``subscribePattern``). Nothing is
read twice and nothing skipped; the records of the other partitions wait only for the handover
(a query start), not for the leader.

A crash half-way leaves one of two states, both of which a start completes: the new file written
but the checkpoint not yet moved (``routing.handover.next.json`` beside the old checkpoint: the
old one stands, the file is dropped), or moved (the file is made current). The file describes
the running checkpoint for as long as it lives, so a job that restarts while partitions are held
reads the same partitions from the same place.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.ingest.data_loss import Offsets, resume_offsets
from shared.json_files import read_json, write_json_atomic

ROUTING = "routing"
HANDOVER_FILE = "routing.handover.json"
NEXT_FILE = "routing.handover.next.json"
REPLACED = "routing.replaced"
#: Replaced checkpoints kept (the newest), for an operator who wants to see what ran before.
KEPT_REPLACED = 3
#: The Kafka source's "from the partition's earliest / latest offset" in a startingOffsets
#: document.
EARLIEST, LATEST = -2, -1

Partition = tuple[str, int]


@dataclass(frozen=True)
class Handover:
    """Where a fresh routing checkpoint starts each raw partition it reads (``start``), and the
    partitions left out with the offset each is taken back at (``held``)."""

    start: Offsets
    held: Offsets = field(default_factory=dict)

    def held_partitions(self) -> set[Partition]:
        return {(topic, n) for topic, parts in self.held.items() for n in parts}

    def partitions(self) -> set[Partition]:
        """Every raw partition it knows: read or held."""
        return self.held_partitions() | {(t, n) for t, parts in self.start.items() for n in parts}

    def source_options(self, raw_pattern: str) -> dict[str, str]:
        """The Kafka source options of routing on this handover's checkpoint: every raw topic by
        pattern when nothing is held, else the partitions of ``start`` by name; and their start
        offsets (the source reads them only on a fresh checkpoint)."""
        reads = (
            {"subscribePattern": raw_pattern}
            if not self.held
            else {"assign": json.dumps({t: sorted(ps) for t, ps in sorted(self.start.items())})}
        )
        return {**reads, "startingOffsets": json.dumps(offsets_json(self.start))}

    def as_json(self) -> dict[str, object]:
        return {"start": offsets_json(self.start), "held": offsets_json(self.held)}


def first_start(starting_offsets: str) -> int:
    """Where routing that never ran starts a partition (MESH_INGEST_STARTING_OFFSETS)."""
    return LATEST if starting_offsets == "latest" else EARLIEST


def load(checkpoints: Path) -> Handover | None:
    """The handover the routing checkpoint under ``checkpoints`` runs on (None: routing never
    handed over, it reads every raw topic by pattern from its configured start), a half-done one
    completed or dropped first (see the module's docstring)."""
    pending = checkpoints / NEXT_FILE
    if pending.is_file():
        if (checkpoints / ROUTING).exists():
            pending.unlink()  # the old checkpoint was not moved: it still runs
        else:
            pending.replace(checkpoints / HANDOVER_FILE)
    document = read_json(checkpoints / HANDOVER_FILE)
    if not document:
        return None
    return Handover(_offsets(document.get("start")), _offsets(document.get("held")))


def hand_over(
    checkpoints: Path,
    leave_out: Iterable[Partition],
    raw_now: Mapping[str, Iterable[int]],
    never_ran: int = EARLIEST,
) -> Handover:
    """Move routing's stopped checkpoint aside and return the handover its successor starts
    on: every raw partition of ``raw_now`` (the cluster's, now) but those of ``leave_out``, each
    from where routing left it; those of ``leave_out`` held at theirs (a held partition not in
    ``leave_out`` is taken back). Where routing left a partition: its checkpoint's last
    committed batch, else (nothing committed yet) where the running handover started or holds
    it, else its earliest (a partition that appeared since), or ``never_ran`` if routing never
    ran at all."""
    current = load(checkpoints)
    read = resume_offsets(checkpoints / ROUTING)
    earlier = _merged(current.start, current.held) if current else {}
    stood = _merged(earlier, read or {})
    unknown = EARLIEST if current or read else never_ran
    out = set(leave_out)
    start: Offsets = {}
    held: Offsets = {}
    for topic, partitions in raw_now.items():
        for n in partitions:
            offset = stood.get(topic, {}).get(n, unknown)
            chosen = held if (topic, n) in out else start
            chosen.setdefault(topic, {})[n] = offset
    handover = Handover(start, held)
    write_json_atomic(checkpoints / NEXT_FILE, handover.as_json())
    _move_aside(checkpoints)
    (checkpoints / NEXT_FILE).replace(checkpoints / HANDOVER_FILE)
    return handover


def _move_aside(checkpoints: Path) -> None:
    folder = checkpoints / ROUTING
    if not folder.exists():
        return
    replaced = checkpoints / REPLACED
    replaced.mkdir(exist_ok=True)
    numbers = sorted(int(p.name) for p in replaced.iterdir() if p.name.isdigit())
    folder.rename(replaced / str((numbers[-1] + 1) if numbers else 1))
    for old in numbers[: max(len(numbers) + 1 - KEPT_REPLACED, 0)]:
        shutil.rmtree(replaced / str(old), ignore_errors=True)


def _merged(base: Offsets, over: Offsets) -> Offsets:
    """``base``'s offsets, those of ``over`` in their place where it has them."""
    merged = {topic: dict(parts) for topic, parts in base.items()}
    for topic, parts in over.items():
        merged.setdefault(topic, {}).update(parts)
    return merged


def offsets_json(offsets: Offsets) -> dict[str, dict[str, int]]:
    """``offsets`` as Spark's Kafka source writes them (partition numbers as strings)."""
    return {t: {str(n): o for n, o in sorted(ps.items())} for t, ps in sorted(offsets.items())}


def _offsets(document: object) -> Offsets:
    if not isinstance(document, dict):
        return {}
    return {str(t): {int(n): int(o) for n, o in ps.items()} for t, ps in document.items()
            if isinstance(ps, dict)}  # fmt: skip
