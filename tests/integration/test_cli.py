"""The `mesh` command as a user runs it: a real process, real output, real exit codes."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mesh_cli import mesh

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
