"""The history job's status file (:func:`shared.service_files.history_status_file`).

Written when the query has started and after every batch it stored, so that whoever watches
the job from outside (the compose mesh's health check, an operator's ``cat``) knows it runs and
when it last wrote, without opening the Delta tables or the Spark UI.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from shared.json_files import write_json_atomic


class HistoryStatus:
    """``running`` from the query's start, with the count and time of the batches written."""

    def __init__(self, path: Path, location: str) -> None:
        self.path = path
        self.document: dict[str, Any] = {
            "state": "running", "started": time.time(), "location": location,
            "batches": 0, "last_batch_at": None,
        }  # fmt: skip

    def started(self) -> None:
        self._write()

    def batch_written(self) -> None:
        self.document["batches"] += 1
        self.document["last_batch_at"] = time.time()
        self._write()

    def stopped(self, failure: str | None) -> None:
        self.document["state"] = "failed" if failure else "stopped"
        self.document["last_error"] = failure
        self._write()

    def _write(self) -> None:
        self.document["updated"] = time.time()
        write_json_atomic(self.path, self.document)
