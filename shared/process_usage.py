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


def process_usage(pid: int) -> ProcessUsage | None:
    """Usage of ``pid``, or None when it is gone (or not readable)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        statm = Path(f"/proc/{pid}/statm").read_text()
    except OSError:
        return None
    # Fields after the command name, which may itself contain spaces or parentheses.
    fields = stat.rsplit(")", 1)[-1].split()
    user_ticks, system_ticks = int(fields[11]), int(fields[12])
    resident_pages = int(statm.split()[1])
    return ProcessUsage(
        cpu_s=(user_ticks + system_ticks) / _TICKS_PER_SECOND,
        rss_bytes=resident_pages * _PAGE_BYTES,
    )
