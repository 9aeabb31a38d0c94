"""`mesh status` on a container mesh: its containers told apart by role and shown in the lines
the local mesh's processes get (the engine's answers as the status command reads them)."""

from __future__ import annotations

import pytest

from control.compose_status import (
    ContainerMesh,
    print_container_mesh,
    service_line,
    state_word,
)
from hosting.containers.compose import ServiceState
from shared.endpoints import first_broker


def _service(service: str, role: str, status: str = "running", health: str = "healthy",
             **extra) -> ServiceState:  # type: ignore[no-untyped-def]  # fmt: skip
    return ServiceState(service, f"mesh_{service}_1", status, health, extra.pop("exit_code", 0),
                        extra.pop("restarts", 0), role=role, started=1000.0, **extra)  # fmt: skip


def test_states_read_as_the_local_mesh_words() -> None:
    assert state_word(_service("ingest", "ingest")) == "UP"
    assert state_word(_service("ingest", "ingest", health="starting")) == "STARTING"
    assert state_word(_service("ingest", "ingest", health="unhealthy")) == "SICK"
    assert state_word(_service("ingest", "ingest", status="restarting")) == "RESTART"
    assert state_word(_service("ingest", "ingest", status="exited")) == "DOWN"


def test_a_line_has_uptime_and_restarts_or_the_last_exit() -> None:
    up = _service("notifier", "notifier", restarts=2)
    assert service_line("notifier", up, now=1042.0) == (
        "notifier UP     container mesh_notifier_1  up 42 s  restarts 2"
    )
    down = _service("ingest", "ingest", status="exited", exit_code=137, restarts=1)
    assert service_line("ingest", down, now=1042.0) == (
        "ingest   DOWN   container mesh_ingest_1  restarts 1  last exit: code 137"
    )


def test_every_role_gets_its_line_and_each_detector_its_group_lag() -> None:
    mesh = ContainerMesh("detector-mesh", [
        _service("kafka", "broker", environment=(("KAFKA_PORT", "29092"),)),
        _service("ingest", "ingest", environment=(("MESH_TOPIC_PREFIX", "c."),)),
        _service("history", "history"),
        _service("velocity", "detector", command=("python", "-m", "services.detector_runtime",
                                                  "detectors/velocity", "--instance-id", "v")),
    ])  # fmt: skip
    asked: list[tuple[str, list[str]]] = []
    lines: list[str] = []

    def lag(group: str, topics: list[str]) -> str:
        asked.append((group, topics))
        return "7"

    print_container_mesh(mesh, lag, lines.append)
    assert [line.split()[0] for line in lines] == ["broker", "ingest", "history", "detector"]
    assert lines[0].endswith("(container mesh detector-mesh)")
    assert asked == [("c.detector.velocity", ["c.records.transactions"])]
    assert lines[-1].startswith("detector velocity       UP      1/1  container mesh_velocity_1")
    assert "  lag 7  " in lines[-1]


def test_each_node_of_a_cluster_gets_its_line_the_lost_one_down() -> None:
    mesh = ContainerMesh("detector-mesh", [
        _service("kafka-3", "broker"),
        _service("kafka", "broker"),
        _service("kafka-2", "broker", status="exited", health="unhealthy", exit_code=137),
    ])  # fmt: skip
    lines: list[str] = []
    print_container_mesh(mesh, lambda group, topics: "0", lines.append)
    assert [line.split()[:4] for line in lines] == [
        ["broker", "UP", "container", "mesh_kafka_1"],
        ["broker", "DOWN", "container", "mesh_kafka-2_1"],
        ["broker", "UP", "container", "mesh_kafka-3_1"],
    ]  # fmt: skip
    assert lines[0].endswith("(container mesh detector-mesh)")
    assert lines[1].endswith("last exit: code 137")


def test_the_first_broker_of_any_bootstrap_form() -> None:
    assert first_broker("127.0.0.1:29092,127.0.0.1:29093") == ("127.0.0.1", 29092)
    assert first_broker("SASL_SSL://localhost:9093") == ("localhost", 9093)
    assert first_broker("[::1]:9092") == ("::1", 9092)
    with pytest.raises(ValueError):
        first_broker("kafka")
