"""Small JSON state files that one process writes and others read while it runs.

Readers (``mesh status``, a rollout's health check) must never see half a file, so writers
replace the file atomically (write a sibling, then rename); a reader that finds no file, or one
from an older format, gets None instead of an exception.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, document: dict[str, Any]) -> None:
    """Replace ``path`` with ``document`` in one step (readers see the old or the new file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(temporary, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The document at ``path``, or None when it is missing or not a JSON object."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None
