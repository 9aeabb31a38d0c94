"""A local server whose port was taken between its choice and its bind is started again.

Real processes (a Python program standing in for the server), no broker: the first start dies
the way a JVM does on a taken port; the second listens."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hosting.servers.local_server import PORT_RACE_ATTEMPTS, LocalServer
from shared.errors import MeshError
from shared.settings import Settings

TAKEN = "java.net.BindException: Address already in use"


class StandIn(LocalServer[int]):
    """Dies ``deaths`` times with ``last_words`` before a start that stays up."""

    name = "stand-in"
    program = "the stand-in"
    error = MeshError

    def __init__(self, settings: Settings, deaths: int, last_words: str = TAKEN) -> None:
        super().__init__(settings, start_timeout_s=20)
        self.deaths, self.last_words, self.launches = deaths, last_words, 0
        self._where: int | None = None

    def _launch_plan(self) -> tuple[list[str], int]:
        self.launches += 1
        if self.launches <= self.deaths:
            script = f"print({self.last_words!r}); raise SystemExit(1)"
        else:
            script = "import time; time.sleep(60)"
        return [sys.executable, "-c", script], self.launches

    def _ready(self, info: int) -> bool:
        return self.launches > self.deaths

    def _describe(self, info: int) -> str:
        return f"attempt {info}"

    def _published(self) -> int | None:
        return self._where if self.process.running() else None

    def _publish(self, info: int) -> None:
        self._where = info

    def _unpublish(self) -> None:
        self._where = None


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return replace(Settings.from_env({}), home=tmp_path / "home")


def test_a_start_that_lost_its_port_is_tried_again_with_new_ports(settings):
    server = StandIn(settings, deaths=1)
    try:
        info, started = server.ensure_started()
        assert started and info == 2 and server.launches == 2
    finally:
        server.stop(timeout=5)


def test_it_gives_up_after_the_last_attempt(settings):
    server = StandIn(settings, deaths=PORT_RACE_ATTEMPTS)
    with pytest.raises(MeshError, match="exited while starting"):
        server.ensure_started()
    assert server.launches == PORT_RACE_ATTEMPTS


def test_any_other_death_is_reported_at_once(settings):
    server = StandIn(settings, deaths=1, last_words="Exception: the config is wrong")
    with pytest.raises(MeshError, match="the config is wrong"):
        server.ensure_started()
    assert server.launches == 1


def test_a_taken_port_of_an_earlier_start_in_the_log_does_not_count(settings):
    server = StandIn(settings, deaths=1, last_words="Exception: the config is wrong")
    server.process.log_file.parent.mkdir(parents=True, exist_ok=True)
    server.process.log_file.write_text(TAKEN + "\n")  # an earlier start's death, days ago
    with pytest.raises(MeshError, match="the config is wrong"):
        server.ensure_started()
    assert server.launches == 1
