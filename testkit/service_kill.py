"""SIGKILL for a supervised service as a machine's death would deal it: the service process and
everything under it (a Spark job's JVM) at once, its supervisor spared (it must restart it).

A driver killed alone leaves its JVM going on for a while (routing, writing), which is no crash
a case should pretend to test; the ingest and aggregator cases kill through here.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from control.supervised_service import supervised_child
from shared.local_process import LocalProcess
from shared.process_usage import parent_pid


def kill_service(process: LocalProcess) -> list[int]:
    """SIGKILL the service ``process``' supervisor runs now and its children; the pids killed
    (none when no service runs under it)."""
    child = supervised_child(process)
    if child is None or child.pid is None:
        return []
    doomed = [child.pid, *children(child.pid)]
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):  # gone already
            os.kill(pid, signal.SIGKILL)
    return doomed


def halt_service(process: LocalProcess, timeout_s: float = 30.0) -> None:
    """The supervisor, its service and everything under it, at once (SIGKILL, the supervisor
    first so nothing is restarted): how a case ends a job whose outputs it has already read to
    the end. A graceful stop would only wait (real-time routing stops at its next checkpoint,
    then Spark shuts down) for nothing the verdict needs. Whatever the kill leaves (the pid
    file, a stray descendant) ``process.stop()`` clears."""
    info = process.running()
    if info is not None:
        child = supervised_child(process)
        service = [child.pid, *children(child.pid)] if child and child.pid else []
        for pid in [info.pid, *service]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in [info.pid, *service]:
            process.wait_gone(pid, timeout_s)
    process.stop()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    return [
        int(entry.name)
        for entry in Path("/proc").glob("[0-9]*")
        if parent_pid(int(entry.name)) == pid
    ]
