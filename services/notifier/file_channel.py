"""The file channel: one JSON line per notification, appended (an audit trail, or a channel for a
log shipper to pick up). A relative path is under ``$MESH_HOME``."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path

from services.notifier.outcome import Outcome
from services.notifier.rules import FileChannel


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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock, self.path.open("ab") as out:
                out.write(body.rstrip(b"\n") + b"\n")
        except OSError as error:  # a full or read-only disk may clear up: retriable
            return Outcome(False, True, None, f"{self.path}: {error.strerror}",
                           time.perf_counter() - started)  # fmt: skip
        return Outcome(True, False, None, None, time.perf_counter() - started)

    def close(self) -> None:
        """Nothing held open between deliveries."""
