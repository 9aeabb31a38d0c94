"""One hash over a set of build inputs, for the caches that rebuild only when their sources change
(the Kafka Streams peer's build, the compiled decoder's wheel for the Python image)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def files_digest(root: Path, files: Iterable[Path]) -> str:
    """sha256 over each file's path relative to ``root`` and its content, in the order given: a
    change to a file's content or name, or a file added or removed, changes it."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
