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
import re
from collections.abc import Iterator
from typing import Any

import pytest
from mesh_cli import mesh

from hosting.containers.compose import ComposeMesh
from hosting.containers.engine import EngineUnavailable, connect
from hosting.containers.images import ImageBuilder, ImageBuildError
from hosting.containers.stack import SwarmStack
from hosting.servers.dockerd import DockerdError, LocalDockerd
from hosting.servers.ports import ephemeral_port
from shared.settings import Settings
from testkit.container_mesh import RunningMesh, compose_environment

pytestmark = pytest.mark.containers

#: The first container test builds the images (session fixture ``images``) in its setup, which
#: pytest-timeout counts: from an empty layer cache (a fresh machine, debootstrap included) that
#: alone has taken over 300 s, the suite's default.
FIRST_BUILD_TIMEOUT_S = 1200


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("containers") is None:
            continue
        own = item.get_closest_marker("timeout")
        longest = max([FIRST_BUILD_TIMEOUT_S, *(own.args[:1] if own else ())])
        item.add_marker(pytest.mark.timeout(longest), append=False)


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
def images(docker_client: Any, jaeger_binary: None) -> None:
    """The mesh's images, built from this checkout; ``mesh/jaeger`` copies the Jaeger binary,
    which the ``jaeger_binary`` fixture makes sure of first."""
    try:
        ImageBuilder(Settings.from_env(), rebuild=True, say=lambda line: None).build_all()
    except ImageBuildError as error:
        if os.geteuid() != 0 and "needs root" in str(error):
            pytest.skip(f"container stage: {error}")
        raise


@pytest.fixture(scope="module")
def compose_mesh(
    images: None, docker_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningMesh]:
    env, ports = compose_environment(f"mesh-test-{os.getpid()}")
    compose = ComposeMesh(environ=env, say=lambda line: None)
    yield from _running(compose, ports, tmp_path_factory, [])


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
                            tmp_path_factory, ["--swarm"])  # fmt: skip
    finally:
        if not joined:
            docker_client.swarm.leave(force=True)
            for network in docker_client.networks.list(names=["docker_gwbridge"]):
                network.remove()


def _running(
    compose: ComposeMesh,
    ports: dict[str, int],
    tmp_path_factory: pytest.TempPathFactory,
    options: list[str],
) -> Iterator[RunningMesh]:
    """The mesh started as a user starts it: `mesh compose up` returns once it can alert (a
    probe went through ingest and every detector container, issue 34), not when healthy."""
    try:
        up = mesh("compose", "up", "--timeout", "420", *options, env=compose.environ,
                  timeout=900)  # fmt: skip
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        assert re.search(r"^ready +to alert .*\(large_amount, new_country, velocity\)$",
                         up.stdout, re.M), up.stdout  # fmt: skip
        assert f"{compose.project}: ready to alert " in up.stdout, up.stdout
        yield RunningMesh(compose, ports, tmp_path_factory.mktemp("container-mesh"))
    finally:
        compose.down(volumes=True)
