"""Yield the CPU to the live path: a lower priority that holds on this kernel.

``os.nice`` alone does nothing between the mesh's services here: each runs in a session of its
own (``start_new_session``), and with ``sched_autogroup_enabled`` (on by default) the scheduler
shares the CPU between sessions' groups first, by the group's nice value, not the threads'. So
both are set: the process's nice value (its threads, JVM children included) and its group's
(``/proc/self/autogroup``, which an unprivileged process may raise).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

AUTOGROUP = Path("/proc/self/autogroup")


def yield_cpu(niceness: int) -> None:
    """Run this process (and what it starts) ``niceness`` steps below the default."""
    os.nice(niceness)
    # Refused where /proc is read-only (some containers): the nice value still holds there.
    with contextlib.suppress(OSError):
        AUTOGROUP.write_text(str(niceness))
