"""yield_cpu lowers both the process's nice value and its session's scheduling group's (in a
child process: the test's own priority stays)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import os
from shared.cpu_priority import yield_cpu
before = os.nice(0)
yield_cpu(3)
where = "/proc/self/autogroup"
group = open(where).read().split()[-1] if os.path.exists(where) else "-"
print(os.nice(0) - before, group)
"""


def test_the_process_and_its_scheduling_group_yield() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=30, start_new_session=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    raised, group = done.stdout.split()
    assert raised == "3"
    if not Path("/proc/self/autogroup").exists():
        pytest.skip("no /proc/self/autogroup here (kernel without autogroup): only nice checked")
    assert group == "3"
