"""The container stage of `make test`: a Docker engine, the images, one compose mesh per run.

The engine is the one that answers, else a ``dockerd`` this session starts (root only) and
stops at the end. Where none can start, every container test is skipped with that one reason,
printed in pytest's summary; the rest of the suite runs as usual.

The images are (re)built from this checkout at the start: present images and the engine's
layer cache make that seconds when only the code changed; a fresh machine builds them all
(debootstrap included, a few minutes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from control.containers.compose import ComposeMesh
from control.containers.engine import EngineUnavailable, connect
from control.containers.images import ImageBuilder, ImageBuildError
from control.containers.stack import SwarmStack
from control.servers.dockerd import DockerdError, LocalDockerd
from control.servers.ports import ephemeral_port
from shared.settings import Settings

pytestmark = pytest.mark.containers


@pytest.fixture(scope="session")
def docker_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    try:
        yield connect()
        return
    except EngineUnavailable as error:
        unavailable = str(error)
    engine = LocalDockerd(Settings(home=tmp_path_factory.mktemp("dockerd")))
    try:
        _, started = engine.ensure_started()
    except DockerdError as error:
        pytest.skip(f"container stage: {unavailable}; and none could start: {error}")
    try:
        yield connect()
    finally:
        if started:
            engine.stop()


@pytest.fixture(scope="session")
def images(docker_client: Any) -> None:
    try:
        ImageBuilder(Settings.from_env(), rebuild=True, say=lambda line: None).build_all()
    except ImageBuildError as error:
        if os.geteuid() != 0 and "needs root" in str(error):
            pytest.skip(f"container stage: {error}")
        raise


@dataclass(frozen=True)
class RunningMesh:
    """A compose mesh of this test session, on its own ports, project name and volumes."""

    compose: ComposeMesh
    ports: dict[str, int]
    home: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports['MESH_KAFKA_PORT']}"

    @property
    def influx_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['MESH_INFLUX_PORT']}"

    @property
    def trace_ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['MESH_TRACE_UI_PORT']}"

    @property
    def otlp_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['MESH_OTLP_PORT']}"

    def settings(self) -> Settings:
        """What the host's `mesh` CLI uses against this mesh."""
        return Settings(
            bootstrap_servers=self.bootstrap,
            home=self.home,
            influx_url=self.influx_url,
            otlp_endpoint=self.otlp_endpoint,
            trace_ui_url=self.trace_ui_url,
        )


PORTS = ("MESH_KAFKA_PORT", "MESH_KAFKA_CONTROLLER_PORT", "MESH_INFLUX_PORT",
         "MESH_INFLUX_RPC_PORT", "MESH_OTLP_PORT", "MESH_TRACE_UI_PORT")  # fmt: skip


def compose_environment(project: str) -> tuple[dict[str, str], dict[str, int]]:
    ports: dict[str, int] = {}
    for name in PORTS:
        port = ephemeral_port("127.0.0.1")
        while port in ports.values():
            port = ephemeral_port("127.0.0.1")
        ports[name] = port
    env = {**os.environ, "COMPOSE_PROJECT_NAME": project, **{k: str(v) for k, v in ports.items()}}
    return env, ports


@pytest.fixture(scope="module")
def compose_mesh(
    images: None, docker_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningMesh]:
    env, ports = compose_environment(f"mesh-test-{os.getpid()}")
    compose = ComposeMesh(environ=env, say=lambda line: None)
    yield from _running(compose, ports, tmp_path_factory)


@pytest.fixture(scope="module")
def swarm_stack(
    images: None, docker_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningMesh]:
    """The same compose file as a Swarm stack; swarm mode is switched on for it (and off again)
    when the engine is not in a swarm already."""
    from docker.errors import APIError

    joined = docker_client.info().get("Swarm", {}).get("LocalNodeState") == "active"
    if not joined:
        try:
            listen = f"127.0.0.1:{ephemeral_port('127.0.0.1')}"
            docker_client.swarm.init(advertise_addr="127.0.0.1", listen_addr=listen)
        except APIError as error:
            pytest.skip(f"swarm stage: swarm mode cannot start here: {error.explanation}")
    env, ports = compose_environment(f"mesh-stack-{os.getpid()}")
    try:
        yield from _running(SwarmStack(environ=env, say=lambda line: None), ports,
                            tmp_path_factory)  # fmt: skip
    finally:
        if not joined:
            docker_client.swarm.leave(force=True)
            for network in docker_client.networks.list(names=["docker_gwbridge"]):
                network.remove()


def _running(
    compose: ComposeMesh, ports: dict[str, int], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningMesh]:
    try:
        compose.up(timeout_s=420)
        yield RunningMesh(compose, ports, tmp_path_factory.mktemp("container-mesh"))
    finally:
        compose.down(volumes=True)
