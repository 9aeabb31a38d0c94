"""Waiting for a process to be really gone, whether or not it is our child.

A multi-threaded process (a JVM, or Python driving one) shows its main thread as a zombie while
other threads still shut down, so "state Z" alone does not mean gone: every thread must have exited,
and a child of ours is only gone once we have collected its exit status.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait for ``pid`` to exit, reaping it if it is our child; True if it is gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _reap(pid):
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _is_zombie(pid):  # exited, but the parent (someone else) has not reaped it yet
            _reap(pid)
            return True
        time.sleep(0.1)
    return False


def alive(pid: int) -> bool:
    """``pid`` still runs: it exists and is more than an exit status left to collect."""
    return Path(f"/proc/{pid}").exists() and not _is_zombie(pid)


def _reap(pid: int) -> bool:
    """Collect ``pid``'s exit status if it is our exited child; True if it was collected."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return reaped == pid


def _is_zombie(pid: int) -> bool:
    """True when every thread of ``pid`` has exited and only its exit status is left.

    Checking the main thread alone is not enough: the JVM's launcher thread can exit (and show
    as a zombie) while the shutdown still runs in other threads.
    """
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        states = [(t / "stat").read_text().rsplit(")", 1)[-1].split()[0] for t in tasks]
    except (OSError, IndexError):
        return False
    return all(state in {"Z", "X"} for state in states)
