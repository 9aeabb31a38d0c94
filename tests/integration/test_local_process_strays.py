"""A process whose pid file is lost is still found by its tag and stopped by `stop_strays`."""

import sys

import pytest

from shared.local_process import LocalProcess, stop_strays, stray_pids
from shared.pids import wait_gone

pytestmark = pytest.mark.integration


def test_a_process_with_a_lost_pid_file_is_found_by_its_tag_and_stopped(tmp_path):
    process = LocalProcess("sleeper", tmp_path)
    info, started = process.start([sys.executable, "-c", "import time; time.sleep(60)"], {})
    assert started and process.running() == info
    other = LocalProcess("sleeper", tmp_path / "another-home")
    other_info, _ = other.start([sys.executable, "-c", "import time; time.sleep(60)"], {})
    try:
        process.pid_file.unlink()  # what a lost pid file looks like
        assert process.running() is None
        assert stray_pids(tmp_path) == [info.pid]  # not the other home's process
        assert stop_strays(tmp_path, timeout=10) == [info.pid]
        assert wait_gone(info.pid, 10) and stray_pids(tmp_path) == []
        assert other.running() == other_info
    finally:
        other.stop()
