"""infra/compose: the file runs the mesh's services, each reference detector, with health checks
and start order, from settings all in .env; and Compose itself accepts it."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from control.deploy.lifecycle import DETECTORS_DIR
from hosting.containers.compose import (
    CLUSTER_FILE,
    COMPOSE_DIR,
    COMPOSE_FILE,
    NODE_PORTS,
    ONE_SHOT,
    ComposeMesh,
    read_env_file,
)
from testkit.container_mesh import PORTS

BRIDGE_FILE = COMPOSE_DIR / "docker-compose.bridge.yml"


def _file() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def test_every_variable_the_files_use_is_set_in_env() -> None:
    used = set()
    for path in (COMPOSE_FILE, BRIDGE_FILE, CLUSTER_FILE):
        used |= set(re.findall(r"\$\{([A-Z0-9_]+)", path.read_text()))
    assert used - set(read_env_file(COMPOSE_DIR / ".env")) == set()


def test_a_test_mesh_moves_every_port_of_env() -> None:
    """A test's compose mesh takes a free port for each port setting: none is left at its
    default, where the user's mesh or a leftover of an earlier run may listen."""
    ports = {key for key in read_env_file(COMPOSE_DIR / ".env") if key.endswith("_PORT")}
    assert ports == set(PORTS)


def test_each_reference_detector_is_a_service_of_its_own() -> None:
    services = _file()["services"]
    commands = {name: " ".join(s.get("command", [])) for name, s in services.items()}
    for folder in sorted(p.parent.name for p in DETECTORS_DIR.glob("*/manifest.yaml")):
        running = [n for n, c in commands.items() if f"detectors/{folder} " in c + " "]
        assert len(running) == 1, (folder, commands)


def test_services_are_on_the_host_network_with_health_checks_and_start_order() -> None:
    services = _file()["services"]
    for name, service in services.items():
        assert service["network_mode"] == "host", name
        if name not in ONE_SHOT:
            assert "healthcheck" in service, f"{name} has no health check"
            assert service["restart"] == "unless-stopped", name
    assert services["topics"]["depends_on"] == {"kafka": {"condition": "service_healthy"}}
    for name in ("ingest", "metrics-aggregator", "history", "large-amount", "notifier"):
        assert services[name]["depends_on"]["topics"] == {
            "condition": "service_completed_successfully"
        }
    assert services["metrics-aggregator"]["depends_on"]["influxdb"] == {
        "condition": "service_healthy"
    }
    assert services["notifier"]["depends_on"]["webhook-receiver"] == {
        "condition": "service_healthy"
    }


def test_state_lives_in_named_volumes() -> None:
    file = _file()
    mounts = {
        volume.split(":")[0]
        for service in file["services"].values()
        for volume in service.get("volumes", [])
        if not volume.startswith("./")  # configuration, mounted read-only
    }
    assert mounts == set(file["volumes"]) == {
        "kafka-data", "influx-data", "ingest-state", "aggregator-state", "history-data",
        "notifier-state", "receiver-state",
    }  # fmt: skip


def test_configuration_is_mounted_read_only() -> None:
    for name, service in _file()["services"].items():
        for volume in service.get("volumes", []):
            if volume.startswith("./"):
                assert volume.endswith(":ro"), (name, volume)


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose 1.x is not "
                    "installed here (make container-tools installs it, as root)")  # fmt: skip
@pytest.mark.parametrize(
    "files", [(COMPOSE_FILE,), (COMPOSE_FILE, BRIDGE_FILE), (COMPOSE_FILE, CLUSTER_FILE)]
)
def test_docker_compose_accepts_the_files(files: tuple) -> None:
    command = ["docker-compose", "--project-directory", str(COMPOSE_DIR)]
    for path in files:
        command += ["-f", str(path)]
    result = subprocess.run([*command, "config", "--quiet"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_cluster_file_runs_three_nodes_that_know_each_other() -> None:
    cluster = yaml.safe_load(CLUSTER_FILE.read_text())["services"]
    env = read_env_file(COMPOSE_DIR / ".env")
    nodes = {name: cluster[name]["environment"] for name in ("kafka", "kafka-2", "kafka-3")}
    assert [n["KAFKA_NODE_ID"] for n in nodes.values()] == ["1", "2", "3"]
    voters = {n["KAFKA_VOTERS"] for n in nodes.values()}
    assert voters == {"1@127.0.0.1:${MESH_KAFKA_CONTROLLER_PORT},"
                      "2@127.0.0.1:${MESH_KAFKA_2_CONTROLLER_PORT},"
                      "3@127.0.0.1:${MESH_KAFKA_3_CONTROLLER_PORT}"}  # fmt: skip
    assert {n["KAFKA_CLUSTER_ID"] for n in nodes.values()} == {"${MESH_KAFKA_CLUSTER_ID}"}
    assert len(env["MESH_KAFKA_CLUSTER_ID"]) == 22  # a KRaft id: 16 bytes in base64
    assert {(n["KAFKA_INTERNAL_REPLICAS"], n["KAFKA_INTERNAL_MIN_ISR"]) for n in nodes.values()} \
        == {("3", "2")}  # fmt: skip
    assert [cluster[n]["volumes"] for n in ("kafka-2", "kafka-3")] == [
        ["kafka-2-data:/var/lib/kafka"], ["kafka-3-data:/var/lib/kafka"]
    ]  # fmt: skip
    assert set(cluster["topics"]["depends_on"]) == {"kafka-2", "kafka-3"}


def test_every_client_of_the_broker_bootstraps_from_all_three_nodes() -> None:
    base = _file()["services"]
    cluster = yaml.safe_load(CLUSTER_FILE.read_text())["services"]
    clients = {name for name, s in base.items()
               if "MESH_BOOTSTRAP_SERVERS" in (s.get("environment") or {})}  # fmt: skip
    assert clients >= {"topics", "ingest", "notifier", "large-amount"}
    every_node = ",".join("${MESH_SERVICE_HOST}:${" + key + "}" for key in NODE_PORTS)
    for name in clients:
        assert cluster[name]["environment"]["MESH_BOOTSTRAP_SERVERS"] == every_node, name


def test_the_host_reaches_every_node_of_a_cluster() -> None:
    assert ComposeMesh(environ={}).bootstrap == "127.0.0.1:29092"
    cluster = ComposeMesh((COMPOSE_FILE, CLUSTER_FILE), environ={"MESH_KAFKA_3_PORT": "1234"})
    assert cluster.bootstrap == "127.0.0.1:29092,127.0.0.1:29094,127.0.0.1:1234"
