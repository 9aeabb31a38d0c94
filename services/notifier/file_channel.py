"""The file channel: one JSON line per notification, appended (an audit trail, or a channel for a
log shipper to pick up). A relative path is under ``$MESH_HOME``.

A line: ``{"alert_id", "delivered_ms", "source_ms", "traceparent", "alert": {...}}``: the alert
as a webhook would get it, when it was written, when its raw record reached Kafka (if known) and
the trace of the attempt, so the trail alone answers "who was told what, when, and how long
after the fact".
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from services.notifier.outcome import Outcome
from shared.lineage import SOURCE_TIMESTAMP_HTTP_HEADER
from shared.notifier_channels import FileChannel


class FileSender:
    def __init__(self, channel: FileChannel, home: Path) -> None:
        self.channel = channel
        path = Path(channel.path)
        self.path = path if path.is_absolute() else home / path
        self._lock = threading.Lock()

    def send(
        self, body: bytes, idempotency_key: str, extra_headers: Mapping[str, str] | None = None
    ) -> Outcome:
        started = time.perf_counter()
        headers = extra_headers or {}
        source = headers.get(SOURCE_TIMESTAMP_HTTP_HEADER)
        about = json.dumps({
            "alert_id": idempotency_key, "delivered_ms": round(time.time() * 1000),
            "source_ms": int(source) if source else None,
            "traceparent": headers.get("traceparent"),
        })  # fmt: skip
        line = about[:-1].encode() + b', "alert": ' + body.strip() + b"}\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock, self.path.open("ab") as out:
                out.write(line)
        except OSError as error:  # a full or read-only disk may clear up: retriable
            return Outcome(False, True, None, f"{self.path}: {error.strerror}",
                           time.perf_counter() - started)  # fmt: skip
        return Outcome(True, False, None, None, time.perf_counter() - started)

    def close(self) -> None:
        """Nothing held open between deliveries."""
