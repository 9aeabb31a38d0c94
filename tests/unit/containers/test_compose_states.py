"""When `mesh compose up` calls a service ready or failed, from the engine's state."""

from __future__ import annotations

from pathlib import Path

from hosting.containers.compose import ServiceState, read_env_file


def _state(service: str, status: str, health: str = "", exit_code: int = 0) -> ServiceState:
    return ServiceState(service, f"p_{service}_1", status, health, exit_code, 0)


def test_a_service_with_a_health_check_is_ready_only_when_healthy() -> None:
    assert not _state("kafka", "running", "starting").ready
    assert _state("kafka", "running", "healthy").ready
    assert _state("kafka", "running", "unhealthy").failed


def test_the_topics_one_shot_is_ready_once_it_exited_zero() -> None:
    assert not _state("topics", "running").ready
    assert _state("topics", "exited", exit_code=0).ready
    assert _state("topics", "exited", exit_code=1).failed


def test_a_long_running_service_that_exited_failed_but_a_restarting_one_not_yet() -> None:
    assert _state("ingest", "exited", exit_code=0).failed
    assert not _state("ingest", "restarting").failed
    assert not _state("ingest", "restarting").ready


def test_env_file_lines(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("# comment\n\nA=1\nB = two \nEMPTY=\n")
    assert read_env_file(env) == {"A": "1", "B": "two", "EMPTY": ""}
