"""Disks a case can fill or make read-only under a running service, without touching any other.

A case's MESH_HOME is a small tmpfs of its own (``mount -t tmpfs``, root only). *Full* is a
filler file written until the kernel says ENOSPC. *Read-only* is a read-only bind mount of the
folder on top of itself: every file opened from then on is refused with EROFS and ``statvfs``
says read-only, as after a disk error's ``remount,ro``. (Remounting the tmpfs itself read-only
is refused with EBUSY while a service holds its log open for writing, which every one does.)
Unmounting the bind gives the writable folder back.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

#: A case's MESH_HOME: room for a Spark job's checkpoints and logs, and quick to fill.
TMPFS_SIZE = "64m"


class MountRefused(RuntimeError):
    """The kernel would not mount here (not root, or no CAP_SYS_ADMIN in a container)."""


def mount_tmpfs(folder: Path, size: str = TMPFS_SIZE) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    _mount(["-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)])


def make_read_only(folder: Path) -> None:
    """A read-only bind of ``folder`` over itself (undo with :func:`unmount`)."""
    _mount(["--bind", str(folder), str(folder)])
    try:
        _mount(["-o", "remount,bind,ro", str(folder)])
    except MountRefused:
        unmount(folder)
        raise


def unmount(folder: Path) -> None:
    """The top mount on ``folder``; lazily if a process still has it busy (the case stops its
    processes first, so that is a leftover, not the rule)."""
    done = subprocess.run(["umount", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:  # a leftover holds it: detach it now, the kernel frees it later
        subprocess.run(["umount", "--lazy", str(folder)], capture_output=True)


def fill(folder: Path) -> Path:
    """A file in ``folder`` grown until the disk is full (ENOSPC); the file, to free it later.
    Only ever on a mount of the case's own: a folder that is no mount point is refused."""
    if not os.path.ismount(folder):
        raise RuntimeError(f"{folder} is no mount point: refusing to fill the disk under it")
    filler = folder / "filler.bin"
    chunk = b"\0" * 2**20
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
    top_up(filler)
    return filler


def top_up(filler: Path) -> None:
    """Grow ``filler`` again until not even 4 KiB more fits: what others freed meanwhile (a
    dying JVM deletes its temporary files, ~10 MB for Spark) is taken back, so the disk stays
    full for as long as the fault is meant to last."""
    with filler.open("ab", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
    os.sync()


def _mount(arguments: list[str]) -> None:
    done = subprocess.run(["mount", *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        raise MountRefused(f"mount {' '.join(arguments)}: {done.stderr.strip()}")
