"""The supervisor with real child processes: restart with backoff, reasons, clean stops.

Each test starts ``python -m control.supervisor`` around a small Python child and checks the state
file and the child's own traces; nothing is mocked, and every process is stopped by pid.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from polling import wait_for

from shared.pids import wait_gone
from shared.settings import PROJECT_ROOT

pytestmark = pytest.mark.integration

#: A child that counts its starts, crashes (exit 7) until the file says 3 starts, then runs until
#: SIGTERM and records that it got it.
CRASHES_TWICE = """
import pathlib, signal, sys, time
folder = pathlib.Path(sys.argv[1])
starts = folder / "starts"
count = int(starts.read_text()) + 1 if starts.exists() else 1
starts.write_text(str(count))
if count < 3:
    sys.exit(7)
def on_term(signum, frame):
    (folder / "terminated").write_text("yes")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
while True:
    time.sleep(0.1)
"""


def start_supervisor(tmp_path, script, *extra):
    (tmp_path / "child.py").write_text(textwrap.dedent(script))
    command = [
        sys.executable, "-m", "control.supervisor",
        "--state", str(tmp_path / "supervisor.json"),
        "--backoff", "0.2", "--max-backoff", "1", *extra,
        "--", sys.executable, str(tmp_path / "child.py"), str(tmp_path),
    ]  # fmt: skip
    log = (tmp_path / "supervisor.log").open("wb")
    return subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)


def state(tmp_path):
    try:
        return json.loads((tmp_path / "supervisor.json").read_text())
    except (OSError, ValueError):
        return {}


@pytest.fixture
def supervisors():
    started = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_a_crashing_child_is_restarted_with_backoff_then_stopped_cleanly(tmp_path, supervisors):
    supervisor = start_supervisor(tmp_path, CRASHES_TWICE)
    supervisors.append(supervisor)
    running = wait_for(
        lambda: (s := state(tmp_path)).get("restarts") == 2 and s.get("state") == "running" and s,
        what="the third start",
    )
    assert running["last_exit"] == "exit code 7"
    # The state says "running" as soon as the child is spawned; its own first write comes after.
    wait_for(lambda: (tmp_path / "starts").read_text() == "3", what="the third start to run")
    log = (tmp_path / "supervisor.log").read_text()
    assert "restart 1 in 0 s" in log and "restart 2 in 0 s" in log  # 0.2 s, then 0.4 s

    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(20) == 0
    assert (tmp_path / "terminated").read_text() == "yes"  # the child got SIGTERM, not SIGKILL
    assert state(tmp_path)["state"] == "stopped" and state(tmp_path)["child_pid"] is None


def test_a_killed_child_is_restarted_and_the_signal_is_the_reason(tmp_path, supervisors):
    (tmp_path / "starts").write_text("2")  # the child runs from its first start
    supervisor = start_supervisor(tmp_path, CRASHES_TWICE)
    supervisors.append(supervisor)
    first = wait_for(lambda: state(tmp_path).get("child_pid"), what="the child")
    wait_for(lambda: (tmp_path / "starts").read_text() == "3", what="the child to run")
    os.kill(first, signal.SIGKILL)
    second = wait_for(
        lambda: (pid := state(tmp_path).get("child_pid")) not in (None, first) and pid,
        what="a new child",
    )
    assert second != first and state(tmp_path)["last_exit"] == "killed by SIGKILL"
    assert state(tmp_path)["restarts"] == 1
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(20) == 0


def test_the_childs_own_last_error_is_the_reason(tmp_path, supervisors):
    script = """
    import json, pathlib, sys, time
    folder = pathlib.Path(sys.argv[1])
    (folder / "child.json").write_text(json.dumps(
        {"last_error": "200 of the last 200 records failed", "updated": time.time()}))
    sys.exit(3)
    """
    supervisor = start_supervisor(tmp_path, script, "--child-status", str(tmp_path / "child.json"))
    supervisors.append(supervisor)
    backoff = wait_for(lambda: (s := state(tmp_path)).get("state") == "backoff" and s)
    assert backoff["last_exit"] == "exit code 3: 200 of the last 200 records failed"
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(20) == 0 and state(tmp_path)["state"] == "stopped"


def test_a_child_that_exits_zero_is_not_restarted(tmp_path, supervisors):
    supervisor = start_supervisor(tmp_path, "import sys; sys.exit(0)\n")
    supervisors.append(supervisor)
    assert supervisor.wait(20) == 0
    assert state(tmp_path)["restarts"] == 0 and state(tmp_path)["state"] == "stopped"


def test_killing_the_supervisor_takes_the_child_down_too(tmp_path, supervisors):
    (tmp_path / "starts").write_text("2")
    supervisor = start_supervisor(tmp_path, CRASHES_TWICE)
    supervisors.append(supervisor)
    child = wait_for(lambda: state(tmp_path).get("child_pid"), what="the child")
    wait_for(lambda: (tmp_path / "starts").read_text() == "3", what="the child to run")
    supervisor.kill()
    supervisor.wait(10)
    assert wait_gone(child, 10), "the orphaned child kept running"
    assert (tmp_path / "terminated").read_text() == "yes"


def test_a_child_that_ignores_sigterm_is_killed_after_the_stop_timeout(tmp_path, supervisors):
    script = """
    import pathlib, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    (pathlib.Path(sys.argv[1]) / "ignoring").write_text("yes")
    while True:
        time.sleep(0.1)
    """
    supervisor = start_supervisor(tmp_path, script, "--stop-timeout", "2")
    supervisors.append(supervisor)
    child = wait_for(lambda: state(tmp_path).get("child_pid"), what="the child")
    wait_for(lambda: (tmp_path / "ignoring").exists(), what="the child to ignore SIGTERM")

    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(20) == 0
    assert wait_gone(child, 5)
    assert "ignored SIGTERM: SIGKILL" in (tmp_path / "supervisor.log").read_text()
    assert state(tmp_path)["state"] == "stopped"
