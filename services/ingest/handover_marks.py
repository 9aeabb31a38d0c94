"""What each routing handover may route twice, kept where a check can read it.

A handover (:mod:`services.ingest.routing_handover`) that stops routing mid-batch (a raw partition
lost its leader, and a real-time batch with it cannot commit) leaves the records that batch had
routed uncommitted: its successor routes them again from the last committed offsets, as a
restart after a kill would. So, like a kill's mark (chaos/replay_scope.py), each handover notes
the committed offsets it handed over from and the routed topics' ends once the stopped batch's
writes had landed: a record below those ends whose source lies beyond those offsets may come
twice, and no other. The newest KEPT_MARKS are kept in ``routing.handover.marks.json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from services.ingest.data_loss import Offsets
from services.ingest.routing_handover import offsets_json
from shared.json_files import read_json, write_json_atomic

MARKS_FILE = "routing.handover.marks.json"
KEPT_MARKS = 50

#: (routed topic, partition) -> high watermark
Ends = dict[tuple[str, int], int]


class HandoverMark(NamedTuple):
    #: raw topic -> partition -> next offset the successor reads
    committed: Offsets
    #: the routed topics' ends once the stopped batch's writes had landed
    outputs: Ends


def settled_ends(read: Callable[[], Ends | None], settle_s: float = 1.0) -> Ends | None:
    """The routed topics' ends once two reads ``settle_s`` apart agree (a produce request the
    stopped batch, or a killed job, had sent may still be appended; at most five tries); None
    if they cannot be read."""
    ends = read()
    for _ in range(5):
        if ends is None:
            return None
        time.sleep(settle_s)
        again = read()
        if again == ends:
            break
        ends = again
    return ends


def save_mark(checkpoints: Path, committed: Offsets, outputs: Ends) -> None:
    marks = _documents(checkpoints)
    marks.append({
        "at_ms": int(time.time() * 1000),
        "committed": offsets_json(committed),
        "outputs": {f"{t}:{n}": end for (t, n), end in sorted(outputs.items())},
    })  # fmt: skip
    write_json_atomic(checkpoints / MARKS_FILE, {"marks": marks[-KEPT_MARKS:]})


def load_marks(checkpoints: Path) -> list[HandoverMark]:
    """Each handover's mark, oldest first."""
    marks = []
    for document in _documents(checkpoints):
        committed = {t: {int(n): o for n, o in ps.items()}
                     for t, ps in document["committed"].items()}  # fmt: skip
        outputs = {}
        for key, end in document["outputs"].items():
            topic, partition = key.rsplit(":", 1)
            outputs[(topic, int(partition))] = end
        marks.append(HandoverMark(committed, outputs))
    return marks


def _documents(checkpoints: Path) -> list[dict]:
    marks = (read_json(checkpoints / MARKS_FILE) or {}).get("marks")
    return marks if isinstance(marks, list) else []
