"""The supervisor's wait for its child: the exit code as soon as the child exits (also a signal's),
None when the child outlives the wait (real short-lived children); and the exit reason of a
child whose run met a disk that took no writes (the disk's state given). No broker."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from control import supervisor as supervisor_module
from control.supervisor import Supervisor, parser, wait_exit
from shared.disk_space import DiskSpace


def test_the_exit_code_comes_back_when_the_child_exits_during_the_wait() -> None:
    child = subprocess.Popen(["sh", "-c", "sleep 0.2; exit 3"])

    assert wait_exit(child, 30.0) == 3


def test_a_child_that_outlives_the_wait_gives_none_and_runs_on() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        started = time.monotonic()
        assert wait_exit(child, 0.3) is None
        assert time.monotonic() - started >= 0.3
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_child_killed_by_a_signal_gives_the_negative_signal_number() -> None:
    child = subprocess.Popen(["sleep", "30"])
    child.send_signal(signal.SIGKILL)

    assert wait_exit(child, 30.0) == -signal.SIGKILL


def test_a_child_already_reaped_gives_its_code_without_waiting() -> None:
    child = subprocess.Popen(["true"])
    child.wait()

    assert wait_exit(child, 30.0) == 0


def _supervisor(tmp_path: Path) -> Supervisor:
    args = parser().parse_args(["--state", str(tmp_path / "state.json"), "--", "true"])
    return Supervisor(args)


def _space(tmp_path: Path, free_bytes: int) -> DiskSpace:
    return DiskSpace(tmp_path, free_bytes, 64 << 20, free_inodes=1000, read_only=False)


def test_a_child_that_met_a_full_disk_and_died_after_it_came_back_is_said_to_have_met_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = _supervisor(tmp_path)
    monkeypatch.setattr(supervisor_module, "disk_space", lambda path: _space(path, 0))
    supervisor._watch_disk()  # a second of this child's run, while the disk was full
    monkeypatch.setattr(supervisor_module, "disk_space", lambda path: _space(path, 32 << 20))

    reason = supervisor._reason(1, started=0.0)

    assert reason.startswith("exit code 1 (its disk during this run: ")
    assert "no space left" in reason


def test_a_child_whose_disk_was_always_fine_gets_only_its_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = _supervisor(tmp_path)
    monkeypatch.setattr(supervisor_module, "disk_space", lambda path: _space(path, 32 << 20))
    supervisor._watch_disk()

    assert supervisor._reason(1, started=0.0) == "exit code 1"
