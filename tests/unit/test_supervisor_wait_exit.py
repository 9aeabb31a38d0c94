"""The supervisor's wait for its child: the exit code as soon as the child exits (also a signal's),
None when the child outlives the wait. Real short-lived children, no broker."""

from __future__ import annotations

import signal
import subprocess
import time

from control.supervisor import wait_exit


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
