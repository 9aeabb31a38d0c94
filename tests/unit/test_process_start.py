"""When a process started, read from /proc: the container health check's "written by this run"."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from shared.process_usage import started_at


def test_a_process_started_after_the_boot_and_before_now() -> None:
    stat = Path("/proc/stat").read_text().splitlines()
    boot = next(float(line.split()[1]) for line in stat if line.startswith("btime "))
    assert boot <= started_at(1) <= started_at(os.getpid()) <= time.time()  # type: ignore[operator]


def test_a_child_started_now_says_so_and_a_gone_one_is_none() -> None:
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        started = started_at(child.pid)
        # Clock ticks are 10 ms; the boot time is whole seconds: allow that much either way.
        assert started is not None and before - 1.1 <= started <= time.time() + 1.1
    finally:
        child.kill()
        child.wait()
    assert started_at(child.pid) is None
