"""What the driver reads from a query's Spark checkpoint: the clock of a micro-batch."""

from __future__ import annotations

import json
from pathlib import Path


def batch_timestamp_ms(checkpoint: Path, batch_id: int) -> int:
    """The clock of batch ``batch_id`` of the query checkpointed in ``checkpoint``: the
    ``batchTimestampMs`` of its offset log entry (``offsets/<id>``: a version line, then the
    metadata JSON, then the sources' offsets), written before the batch ran and read again when
    it runs again: what ``GroupState.getCurrentProcessingTimeMs`` returned."""
    path = checkpoint / "offsets" / str(batch_id)
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.startswith("{"):
            metadata = json.loads(line)
            if "batchTimestampMs" in metadata:
                return int(metadata["batchTimestampMs"])
    raise ValueError(f"{path} has no batchTimestampMs: not a Spark offset log entry")
