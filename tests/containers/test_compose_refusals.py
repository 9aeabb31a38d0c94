"""What `mesh compose up` refuses before anything starts, each in one line, with a real engine:
a missing image, a port already taken, a compose file edited into an invalid one. Nothing of the
project is left behind (no container carries its label)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from mesh_cli import mesh

from hosting.containers.compose import COMPOSE_FILE, ComposeError, ComposeMesh
from testkit.container_mesh import compose_environment

pytestmark = [pytest.mark.containers]


def _nothing_left(client: Any, project: str) -> bool:
    label = {"label": f"com.docker.compose.project={project}"}
    return client.containers.list(all=True, filters=label) == []


def test_a_missing_image_is_named_with_the_command_that_builds_it(docker_client: Any) -> None:
    env, _ = compose_environment("mesh-refuse-image")
    env["MESH_IMAGE_TAG"] = "never-built"
    with pytest.raises(ComposeError) as refused:
        ComposeMesh(environ=env, say=lambda line: None).up(timeout_s=30)
    # The services are checked in name order: `history` (the Spark image) is the first.
    assert str(refused.value) == (
        "image mesh/spark:never-built (service history) is missing: build the images with "
        "`make images`"
    )
    assert _nothing_left(docker_client, "mesh-refuse-image")


def test_a_port_in_use_is_named_with_its_setting(docker_client: Any, images: None) -> None:
    env, ports = compose_environment("mesh-refuse-port")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports["MESH_KAFKA_PORT"]))
        taken.listen()
        with pytest.raises(ComposeError, match=r"^port \d+ \(MESH_KAFKA_PORT\) is in use"):
            ComposeMesh(environ=env, say=lambda line: None).up(timeout_s=30)
    assert _nothing_left(docker_client, "mesh-refuse-port")


def test_an_invalid_compose_file_gets_composes_own_complaint(
    docker_client: Any, tmp_path: Path
) -> None:
    broken = tmp_path / "override.yml"
    broken.write_text("services:\n  kafka:\n    healthcheck: every five seconds\n")
    env, _ = compose_environment("mesh-refuse-file")
    with pytest.raises(ComposeError) as refused:
        ComposeMesh((COMPOSE_FILE, broken), environ=env, say=lambda line: None).up(timeout_s=30)
    message = str(refused.value)
    assert message.startswith(f"{COMPOSE_FILE}, {broken} is not a valid compose file: ")
    assert "healthcheck" in message and "\n" not in message
    assert _nothing_left(docker_client, "mesh-refuse-file")


def test_a_container_deploy_without_its_image_is_refused_before_anything_is_written(
    docker_client: Any, tmp_path: Path
) -> None:
    env = {"MESH_HOME": str(tmp_path / "home"), "MESH_IMAGE_TAG": "never-built",
           "MESH_BOOTSTRAP_SERVERS": "127.0.0.1:1"}  # fmt: skip
    result = mesh("deploy", "--backend", "docker", "detectors/large_amount", env=env)
    assert (result.returncode, result.stderr.strip()) == (
        2, "mesh: error: image mesh/python:never-built not found: build it with `make images`"
    )  # fmt: skip
    assert not (tmp_path / "home" / "deployments").exists()
