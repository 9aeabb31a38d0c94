"""Instance ids: ``<instance name>@<host>:<pid>:<start ms>`` (docs/metrics.md).

A process keeps its id for its life, and a restarted process gets a new one (a new pid, or the
same pid with a later start), so the aggregator adds a restarted instance's counts to the dead
one's instead of replacing them. ``/`` separates the id from the metric name in keys, so it is
removed from the name and the host.
"""

from __future__ import annotations

import os
import socket
import threading
import time

_lock = threading.Lock()
#: (name, pid) -> id; the pid is part of the key so a forked child computes its own.
_ids: dict[tuple[str, int], str] = {}
#: pid -> when that process first asked for an id, epoch ms.
_start_ms: dict[int, int] = {}


def instance_id(name: str) -> str:
    """This process's id for instance ``name``: the same string every time it is asked."""
    pid = os.getpid()
    found = _ids.get((name, pid))
    if found is not None:
        return found
    clean = name.replace("/", "")
    if not clean:
        raise ValueError(f"an instance needs a name (e.g. detector-velocity-r1-0), got {name!r}")
    with _lock:
        start = _start_ms.setdefault(pid, int(time.time() * 1000))
        host = socket.gethostname().replace("/", "") or "localhost"
        return _ids.setdefault((name, pid), f"{clean}@{host}:{pid}:{start}")
