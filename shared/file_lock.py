"""One exclusive lock per MESH_HOME folder, so concurrent `mesh` commands never race.

Both the broker and every supervised process serialise start and stop with it; a folder that
cannot be created or written becomes a one-line error saying to point MESH_HOME elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
from collections.abc import Iterator
from pathlib import Path

from shared.errors import MeshError


@contextlib.contextmanager
def folder_lock(folder: Path, error: type[MeshError] = MeshError) -> Iterator[None]:
    """Hold ``folder/.lock`` exclusively (creating the folder); raise ``error`` if unwritable."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = (folder / ".lock").open("w")
    except OSError as exc:
        remedy = {
            errno.ENOSPC: "free space there",
            errno.EROFS: "remount it read-write",
        }.get(exc.errno or 0, "set MESH_HOME to a folder you can write")
        raise error(f"cannot write {folder}: {exc.strerror}; {remedy}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
