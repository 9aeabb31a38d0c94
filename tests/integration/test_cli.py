"""The `mesh` command as a user runs it: a real process, real output, real exit codes."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mesh_cli import mesh
from polling import wait_for

from control.launch.aggregator import aggregator_process
from control.supervised_service import supervised_child
from shared.kafka.topics import declared_topics
from shared.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.integration


def test_topics_apply_then_list_and_describe_against_the_session_broker(
    kafka_bootstrap, unique_name, tmp_path
):
    """MESH_TOPIC_PREFIX gives this test its own copy of every declared topic."""
    prefix = unique_name("cli") + "."
    env = {
        "MESH_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "MESH_TOPIC_PREFIX": prefix,
        "MESH_HOME": str(tmp_path / "home"),
    }
    declared = len(declared_topics(Settings.from_env(env)))
    assert declared >= 10
    first = mesh("topics", "apply", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("created") == declared
    again = mesh("topics", "apply", env=env)
    assert again.returncode == 0 and again.stdout.count("unchanged") == declared

    listing = mesh("topics", "list", env=env)
    assert listing.returncode == 0
    assert f"{prefix}metrics.windows" in listing.stdout and "compact" in listing.stdout

    described = mesh("describe", env=env)
    assert described.returncode == 0
    assert f"{prefix}records.transactions" in described.stdout
    assert "co-partitioned: records-by-customer" in described.stdout


def test_up_status_down_on_a_busy_preferred_port(tmp_path):
    """`mesh up` starts its own broker (moving off a busy port), `down` stops it."""
    home = tmp_path / "home"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {"MESH_HOME": str(home), "MESH_BROKER_PORT": str(port)}
        try:
            up = mesh("up", "--no-wait", env=env)  # readiness: test_secure_mesh_up
            assert up.returncode == 0, up.stderr
            assert f"(port {port} was busy)" in up.stdout
            assert "created   raw.transactions" in up.stdout

            again = mesh("up", "--no-wait", env=env)
            assert "already running" in again.stdout
            assert "unchanged raw.transactions" in again.stdout

            assert "started ingest pid" in up.stdout
            assert "already running: ingest pid" in again.stdout
            assert "started notifier pid" in up.stdout
            assert "already running: notifier pid" in again.stdout

            status = mesh("status", env=env)
            assert status.returncode == 0
            assert "broker   UP" in status.stdout and "records.invalid" in status.stdout
            assert "ingest   UP" in status.stdout
            assert "notifier UP" in status.stdout, status.stdout
            assert "detector velocity       UP      2/2  v1.0.0" in status.stdout
            large_amount_before = _detector_state(status.stdout, "large_amount")
            assert large_amount_before[0] == "UP" and len(large_amount_before[1]) == 1

            # The metrics aggregator runs under a supervisor: killed, it is back within seconds.
            aggregator = aggregator_process(Settings.from_env(env))
            job = supervised_child(aggregator)
            assert job is not None and job.pid is not None, job
            os.kill(job.pid, signal.SIGKILL)
            killed = "restarts 1 (last exit: killed by SIGKILL)"
            wait_for(
                lambda: killed in mesh("status", env=env).stdout,
                60,
                "mesh status to show the aggregator restarted by its supervisor",
            )
            restarted = supervised_child(aggregator)
            assert restarted is not None and restarted.pid not in (None, job.pid)

            stopped = mesh("stop", "velocity", env=env)
            assert (
                stopped.returncode == 0 and stopped.stdout.count("stopped detector-velocity") == 2
            )
            after_stop = mesh("status", env=env).stdout
            assert "detector velocity       STOPPED 0/2" in after_stop
            # Same state and the same replica pid: lag and rate figures may differ between two
            # looks (`lag ?` while the group coordinator is not answering yet).
            assert _detector_state(after_stop, "large_amount") == large_amount_before, (
                "stopping one detector touched another"
            )
            logs = mesh("logs", "large_amount", "-n", "5", env=env)
            assert logs.returncode == 0 and logs.stdout.strip()
            unknown = mesh("stop", "no_such_detector", env=env)
            assert unknown.returncode == 2
            assert "known: ingest, notifier, large_amount, new_country, velocity" in unknown.stderr
            notifier_logs = mesh("logs", "notifier", "-n", "50", env=env)
            assert "took alerts partitions" in notifier_logs.stdout, notifier_logs.stdout
        finally:
            down = mesh("down", env=env)
        assert down.returncode == 0 and "stopped Kafka broker" in down.stdout
        assert "stopped ingest pid" in down.stdout
        assert "stopped notifier pid" in down.stdout
        assert down.stdout.count("stopped detector") == 2  # velocity was stopped already
    after = mesh("status", env=env)
    assert after.returncode == 1 and "DOWN" in after.stdout


def _detector_state(status: str, name: str) -> tuple[str, list[str]]:
    """A detector's state word in `mesh status` and the pids of its replica lines below it."""
    lines = status.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith(f"detector {name} "))
    pids = []
    for line in lines[index + 1 :]:
        if not line.startswith("  "):
            break
        if line.strip().startswith(("autoscale ", "shadow ")):  # the detector's, not a replica's
            continue
        pids.append(line.split("pid", 1)[1].split()[0])
    return lines[index].split()[2], pids


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("broker", "status"), {"MESH_BROKER_PORT": "ninety"}, "MESH_BROKER_PORT"),
        (("topics", "list"), {"MESH_TOPICS_FILE": "/nonexistent/topics.yaml"}, "MESH_TOPICS_FILE"),
        (("topics", "list"), {}, "no Kafka broker"),
        (("broker", "start"), {"MESH_HOME": "/proc/mesh-cannot-live-here"}, "MESH_HOME"),
        (("produce", "--count", "-5", "--dry-run"), {}, "count"),
    ],
)
def test_user_mistakes_get_one_line_and_no_stack_trace(args, env, message, tmp_path):
    env = {"MESH_HOME": str(tmp_path / "home"), **env}
    result = mesh(*args, env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr


def test_an_unreachable_external_cluster_is_one_line(tmp_path):
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    closed = port.getsockname()[1]
    port.close()
    env = {"MESH_BOOTSTRAP_SERVERS": f"127.0.0.1:{closed}", "MESH_HOME": str(tmp_path)}
    result = mesh("topics", "list", env=env, timeout=60)
    assert result.returncode == 2
    assert "did not answer" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_lists_the_verbs():
    result = mesh("--help", env={})
    assert result.returncode == 0
    verbs = ("up", "down", "status", "stop", "logs", "describe", "broker", "topics", "produce")
    for verb in (*verbs, "deploy", "rollout", "scale"):
        assert verb in result.stdout


def test_unknown_verb_is_refused_by_name():
    result = mesh("deploy-everything", env={})
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_python_entry_point_is_installed():
    assert (Path(sys.executable).parent / "mesh").exists()


def test_missing_java_is_one_line_with_the_fix(tmp_path):
    """With the jars cached but no `java` on PATH, starting the broker says what to install."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {"MESH_HOME": str(tmp_path / "home"), "PATH": str(bin_dir)}
    result = subprocess.run(
        [sys.executable, "-m", "control.cli.main", "broker", "start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PROJECT_ROOT,
    )
    assert result.returncode == 2
    assert "java" in result.stderr and "apt-get install" in result.stderr
    assert "Traceback" not in result.stderr
