"""Whether a folder's disk takes writes: the one fault no service can report itself.

Every service keeps its checkpoints, state and log under MESH_HOME. When that disk is full or
read-only, a service dies on its next write and cannot even log why (its log is there too), so
the control plane asks the kernel instead (``statvfs``): `mesh status` shows the problem, and the
supervisor names it in the reason a service died. Chaos case 13 checks both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Below this much free space a Spark checkpoint write (a few MiB with its temporary copy) or a
#: state file can fail: the disk counts as full.
FULL_BELOW_BYTES = 8 * 2**20
#: A disk with less free than this share of its size is low (Kafka's log and Spark's checkpoints
#: grow with the load, so a share says more than a fixed size).
LOW_SHARE = 0.05


@dataclass(frozen=True)
class DiskSpace:
    path: Path
    free_bytes: int
    total_bytes: int
    free_inodes: int
    read_only: bool

    @property
    def problem(self) -> str | None:
        """What stops (or soon stops) writes there, in words; None if nothing does."""
        if self.read_only:
            return "read-only"
        if self.free_bytes < FULL_BELOW_BYTES:
            return f"no space left ({self._free_of_total()})"
        if self.free_inodes == 0:
            return "no inodes left (no new file can be made)"
        if self.free_bytes < LOW_SHARE * self.total_bytes:
            return f"low on space ({self._free_of_total()})"
        return None

    def _free_of_total(self) -> str:
        return f"{size_text(self.free_bytes)} free of {size_text(self.total_bytes)}"

    @property
    def state(self) -> str:
        """``OK``, ``LOW`` (writes still work), ``FULL`` (space or inodes) or ``READONLY``."""
        problem = self.problem
        if problem is None:
            return "OK"
        if self.read_only:
            return "READONLY"
        return "LOW" if problem.startswith("low") else "FULL"

    @property
    def blocks_writes(self) -> bool:
        """True when writes fail now (full, no inodes, read-only), not only soon (low)."""
        return self.state in ("FULL", "READONLY")

    @property
    def advice(self) -> str:
        """What an operator should do about the problem ('' when there is none)."""
        if self.state == "LOW":
            return "free space there before services stop on it"
        if not self.blocks_writes:
            return ""
        remedy = "remount it read-write" if self.read_only else "free space there"
        return (f"services cannot write their checkpoints, state or logs; {remedy} and their "
                "supervisors restart them")  # fmt: skip

    def text(self) -> str:
        """``/var/mesh  41.2 GiB free of 100 GiB`` or ``/var/mesh: no space left (...)``."""
        if self.problem:
            return f"{self.path}: {self.problem}"
        return f"{self.path}  {size_text(self.free_bytes)} free of {size_text(self.total_bytes)}"


def disk_space(path: Path) -> DiskSpace:
    """The disk under ``path`` (its nearest existing folder, as MESH_HOME may not exist yet)."""
    where = path
    while not where.exists() and where != where.parent:
        where = where.parent
    stats = os.statvfs(where)
    return DiskSpace(
        path=path,
        free_bytes=stats.f_bavail * stats.f_frsize,
        total_bytes=stats.f_blocks * stats.f_frsize,
        free_inodes=stats.f_favail if stats.f_files else -1,  # some filesystems count none
        read_only=bool(stats.f_flag & os.ST_RDONLY),
    )


def size_text(count: int) -> str:
    """``31.2 KiB``: a byte count as people read it."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"
