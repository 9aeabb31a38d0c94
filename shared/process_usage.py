"""CPU seconds and resident memory of one process, read from /proc.

Measured from outside the process (what the kernel accounts to it), so a detector's own
numbers cannot be wrong about what it costs: that is how `mesh status` charges each instance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcessUsage:
    #: user + system CPU time since the process started
    cpu_s: float
    #: resident set size now
    rss_bytes: int
    #: the resident pages that are the process's own (anonymous: heap, stacks), without the
    #: pages of mapped files, which are the kernel's cache of a file and reclaimable (InfluxDB's
    #: mapped data files grow its resident size with the data on disk)
    private_bytes: int


def process_usage(pid: int) -> ProcessUsage | None:
    """Usage of ``pid``, or None when it is gone (or not readable)."""
    try:
        fields = _stat_fields(pid)
        statm = Path(f"/proc/{pid}/statm").read_text()
    except OSError:
        return None
    user_ticks, system_ticks = int(fields[11]), int(fields[12])
    resident_pages, shared_pages = (int(n) for n in statm.split()[1:3])
    return ProcessUsage(
        cpu_s=(user_ticks + system_ticks) / _TICKS_PER_SECOND,
        rss_bytes=resident_pages * _PAGE_BYTES,
        private_bytes=(resident_pages - shared_pages) * _PAGE_BYTES,
    )


def parent_pid(pid: int) -> int | None:
    """The pid of ``pid``'s parent, or None when it is gone."""
    try:
        return int(_stat_fields(pid)[1])
    except OSError:
        return None


def started_at(pid: int) -> float | None:
    """When ``pid`` started, as a Unix time (the boot time plus its start in clock ticks), or
    None when it is gone."""
    try:
        ticks = int(_stat_fields(pid)[19])
        stat = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    boot = next(float(line.split()[1]) for line in stat if line.startswith("btime "))
    return boot + ticks / _TICKS_PER_SECOND


def _stat_fields(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` after the command name (which may hold spaces or parentheses):
    field 0 is the state, 1 the parent's pid, 11 and 12 user and system ticks, 19 the start time
    in ticks."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
