"""The window counts' state partitions as their checkpoint fixed them, for sizing the job.

A stateful query keeps the ``spark.sql.shuffle.partitions`` of its first batch for ever: Spark
writes it into every offset log entry and restores it at each restart, whatever the session says,
because its state lives in that many store partitions. Ingest sizes its local master and the
slots it keeps beside real-time routing (:func:`services.ingest.trigger_mode.side_slots`) from the
counts' partition count, so it must use the count the query will really run with: a mesh whose
counts were checkpointed with 4 partitions (the default before issue 29 measured 1 as cheaper)
keeps 4, and gets the slots for 4; otherwise its counts would take routing's slots at a
hand-over.
"""

from __future__ import annotations

import json
from pathlib import Path

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def checkpointed_shuffle_partitions(query_checkpoint: Path) -> int | None:
    """The shuffle partitions in the newest readable offset log entry of ``query_checkpoint``;
    None when the query has no entry yet (a new checkpoint takes the configured count)."""
    offsets = query_checkpoint / "offsets"
    if not offsets.is_dir():
        return None
    batches = sorted((int(p.name) for p in offsets.iterdir() if p.name.isdigit()), reverse=True)
    for batch in batches:
        found = _entry_partitions(offsets / str(batch))
        if found is not None:
            return found
    return None


def _entry_partitions(entry: Path) -> int | None:
    """An offset log entry is ``v1``, then one JSON line of metadata (with ``conf``), then the
    sources' offsets; an entry that does not read that way says nothing."""
    try:
        lines = entry.read_text(encoding="utf-8").splitlines()
        value = json.loads(lines[1])["conf"][SHUFFLE_PARTITIONS]
        partitions = int(value)
    except (OSError, UnicodeDecodeError, IndexError, ValueError, KeyError, TypeError):
        return None
    return partitions if partitions > 0 else None
