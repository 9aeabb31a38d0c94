"""`mesh compose` and `mesh deploy --backend docker` as a user meets their mistakes: one line,
exit 2, nothing started (no engine is needed to say so)."""

from __future__ import annotations

from pathlib import Path

from mesh_cli import mesh

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def test_compose_up_without_an_engine_says_how_to_start_one() -> None:
    result = mesh("compose", "up", env=NO_ENGINE)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "no Docker engine answers" in lines[0] and "dockerd --bridge=none" in lines[0]


def test_compose_up_with_a_missing_override_file_names_it(tmp_path: Path) -> None:
    result = mesh("compose", "up", "--file", str(tmp_path / "nope.yml"), env=NO_ENGINE)
    assert result.returncode == 2
    assert result.stderr.strip() == f"mesh: error: compose file {tmp_path / 'nope.yml'} not found"


def test_compose_up_refuses_a_timeout_of_zero() -> None:
    result = mesh("compose", "up", "--timeout", "0", env=NO_ENGINE)
    assert (result.returncode, result.stderr.strip()) == (
        2, "mesh: error: --timeout must be more than 0 seconds"
    )  # fmt: skip


def test_compose_up_runs_one_broker_or_a_cluster_of_three() -> None:
    result = mesh("compose", "up", "--brokers", "2", env=NO_ENGINE)
    assert (result.returncode, result.stderr.strip()) == (
        2, "mesh: error: --brokers 2: the container mesh runs 1 broker or a cluster of 3"
    )  # fmt: skip
    result = mesh("compose", "up", "--brokers", "3", "--swarm", env=NO_ENGINE)
    assert (result.returncode, result.stderr.strip()) == (
        2, "mesh: error: --brokers 3 is for compose; a Swarm stack runs one broker"
    )  # fmt: skip


def test_deploy_refuses_an_unknown_backend() -> None:
    result = mesh("deploy", "--backend", "k8s", "detectors/large_amount", env=NO_ENGINE)
    assert result.returncode == 2
    assert "invalid choice: 'k8s'" in result.stderr
