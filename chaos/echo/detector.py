"""One LOW alert per transaction: the reliability suite's output is then its input, one for one,
and a lost, repeated or reordered record shows as a missing, repeated or reordered alert (its
``source_record_id`` is the record's id, which carries the key and a per-key sequence)."""

from __future__ import annotations

from typing import Any

from shared.detector import Context, detector


@detector(name="echo", version="1.0.0", inputs=["transactions"])
def detect(record: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    return [ctx.alert("echo", severity="LOW", score=0.0, reason="smoke test")]
