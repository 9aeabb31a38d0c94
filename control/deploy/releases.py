"""Immutable snapshots of a detector folder, one per deployed version.

Instances run from ``$MESH_HOME/deployments/<name>/releases/<seq>-<version>/``, never from the
folder the author keeps editing: a rollback must restart exactly the code that ran before, and an
edit in the source folder must not leak into a running detector at its next restart.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

_IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


@dataclass(frozen=True)
class Release:
    seq: int
    version: str
    #: sha256 of the folder's files (names and bytes), to see whether a source changed
    digest: str
    path: str
    created: float


def folder_digest(folder: Path) -> str:
    """A hash of every file under ``folder`` that a release would copy."""
    digest = hashlib.sha256()
    for path in _files(folder):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def snapshot(source: Path, releases_dir: Path, seq: int, version: str) -> Release:
    """Copy ``source`` into release number ``seq`` (replacing a half-written earlier attempt)."""
    target = releases_dir / f"{seq}-{version}"
    if target.exists():
        shutil.rmtree(target)
    for path in _files(source):
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
    return Release(seq, version, folder_digest(source), str(target), time.time())


def _files(folder: Path) -> list[Path]:
    return sorted(
        path
        for path in folder.rglob("*")
        if path.is_file()
        and not path.name.startswith(".")
        and path.suffix != ".pyc"
        and not _IGNORED_DIRS.intersection(p.name for p in path.relative_to(folder).parents)
    )
