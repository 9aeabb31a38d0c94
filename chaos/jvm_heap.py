"""What a JVM holds: its live heap, read from outside right after a full collection.

Why the soak judges a JVM by this and not by its private memory: a JVM's resident pages move
with its collector (regions committed and given back), its JIT's code cache and its malloc
arenas, none of which is something the mesh holds on to; the metrics aggregator's private memory
went +200 then -240 MiB in an hour's soak. What a leak in a JVM service fills is its heap. The
heap in use at a random moment is no better: G1 collects its old generation only after a
concurrent cycle, started when the heap is some 45 % full, so an 8-minute soak saw every JVM's
old generation "grow" 230-4 200 MiB/h without a leak. After a full collection the heap in use is
what is still reachable: that rising sample after sample is a leak.

So each sample asks the JVM for a full collection (``jcmd PID GC.run``, the same as
``System.gc()``: a pause of a fraction of a second on these heaps, once per sample, which the
soak's tail figures then include) and reads its old generation in use from its performance
counters (``jstat -gc``, ``OU``): a full collection leaves every live object there. Not the
survivors and eden too: they hold what the JVM allocated in the moment between the collection
and the read, tens to hundreds of MiB at ingest's rate (an hour's soak read ingest's "live heap"
anywhere from 231 to 405 MiB that way, sample to sample).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

#: How long a full collection or a counter read may take.
JCMD_TIMEOUT_S = 60.0
#: ``jstat -gc``'s column of the old generation in use (KiB).
OLD_USED = "OU"


def is_jvm(pid: int) -> bool:
    """Whether ``pid`` is a running ``java`` process."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "java"
    except OSError:
        return False


def live_heap_mib(pid: int) -> float | None:
    """The heap JVM ``pid`` still uses after a full collection, MiB; None when it cannot be
    read (gone, no JDK tools, performance counters off)."""
    try:
        collected = subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True,
                                   timeout=JCMD_TIMEOUT_S, check=False)  # fmt: skip
        if collected.returncode != 0:
            return None
        read = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True,
                              timeout=JCMD_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_used_mib(read.stdout) if read.returncode == 0 else None


def parse_used_mib(output: str) -> float | None:
    """The old generation in use (KiB) of ``jstat -gc``'s header and value lines, in MiB."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    if len(lines) < 2 or OLD_USED not in lines[0]:
        return None
    try:
        return float(lines[1][lines[0].index(OLD_USED)]) / 1024
    except (IndexError, ValueError):
        return None


def heap_mib(pids: Iterable[int]) -> float | None:
    """The live heaps of the JVMs among ``pids`` (a service and its children), summed; None
    when none of them is a JVM that could be read."""
    read = [live_heap_mib(pid) for pid in pids if is_jvm(pid)]
    found = [mib for mib in read if mib is not None]
    return sum(found) if found else None
