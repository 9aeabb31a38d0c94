"""How far a Structured Streaming query got, read from its checkpoint folder without Spark.

``offsets/<batch>`` holds, after a version line and a metadata line, one JSON line per source:
the offsets that batch read up to; ``commits/<batch>`` exists once the batch's output was
written. So the newest batch with both is what the query has finished, and for a Kafka source
its line maps topic -> partition -> the next offset to read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path


def committed_kafka_offsets(checkpoint: Path) -> dict[str, dict[int, int]] | None:
    """Topic -> partition -> next offset of the newest committed batch of the query's first
    (Kafka) source; None when the query has committed no batch yet."""
    committed = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*") if p.name.isdigit()]
    for batch in sorted(committed, reverse=True):
        offsets = checkpoint / "offsets" / str(batch)
        if not offsets.exists():
            continue
        lines = [line for line in offsets.read_text().splitlines() if line.strip()]
        if len(lines) < 3:
            continue
        source = json.loads(lines[2])
        return {
            topic: {int(number): int(offset) for number, offset in parts.items()}
            for topic, parts in source.items()
        }
    return None


def await_committed(
    checkpoint: Path, timeout_s: float, give_up: Callable[[], bool] = lambda: False
) -> bool:
    """Whether the query under ``checkpoint`` has committed a batch (see
    :func:`committed_kafka_offsets`), waited for up to ``timeout_s`` or until ``give_up``."""
    deadline = time.monotonic() + timeout_s
    while committed_kafka_offsets(checkpoint) is None:
        if time.monotonic() > deadline or give_up():
            return False
        time.sleep(0.5)
    return True
