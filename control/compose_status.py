"""`mesh status` against a container mesh's broker: its services as the local mesh's are shown.

Pointed at the compose mesh's broker (``MESH_BOOTSTRAP_SERVERS=127.0.0.1:29092 mesh status``),
`mesh status` used to look for the local processes, found none, and listed ingest, InfluxDB, the
aggregator, the notifier and Jaeger as DOWN ("start it with `mesh up`") above container lines that
said they were healthy (issue 34). Now it first asks which kind of mesh it looks at: a container
mesh on this machine's engine one of whose broker services listens on the bootstrap's port is
that mesh, and each of its services gets the line a local service gets (state, uptime, restarts,
last exit; every broker node of a cluster its own), each detector service its group's lag and
its records/s (from the status file the runtime writes in its container).
"""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from control.compose_readiness import detector_reader
from hosting.containers.compose import ServiceState, service_states
from hosting.containers.engine import EngineUnavailable, connect
from shared.endpoints import first_broker
from shared.topic_names import TopicNames

#: A container mesh service's line label, by its ``mesh.role`` (the local mesh's labels).
LABELS = {
    "ingest": "ingest",
    "metrics-store": "influxdb",
    "metrics-aggregator": "metrics",
    "history": "history",
    "notifier": "notifier",
    "trace-backend": "jaeger",
    "webhook-receiver": "receiver",
}
#: Where the detector runtime keeps its status file in its container (the compose file's
#: MESH_INSTANCE_STATUS).
STATUS_FILE = "/var/lib/mesh/instance.json"

Lag = Callable[[str, list[str]], str]


@dataclass(frozen=True)
class ContainerMesh:
    """A container mesh on this machine's engine: its project (or stack) and its services."""

    project: str
    services: list[ServiceState]

    @property
    def names(self) -> TopicNames:
        """Its topics' and groups' names: the prefix its services were started with."""
        prefixes = (dict(s.environment).get("MESH_TOPIC_PREFIX") for s in self.services)
        return TopicNames(next((p for p in prefixes if p is not None), ""))

    def service(self, role: str) -> ServiceState | None:
        return next((s for s in self.services if s.role == role), None)

    @property
    def brokers(self) -> list[ServiceState]:
        """Its broker nodes' containers, in service order (one, or a cluster's three)."""
        return sorted((s for s in self.services if s.role == "broker"), key=lambda s: s.service)


def container_mesh_of(bootstrap: str) -> ContainerMesh | None:
    """The container mesh whose broker listens on ``bootstrap``'s port on this machine; None
    when there is none (or no engine answers)."""
    try:
        host, port = first_broker(bootstrap)
    except ValueError:
        return None
    if host not in ("127.0.0.1", "localhost", "::1", "host.docker.internal"):
        return None
    try:
        projects = service_states(connect(timeout_s=3))
    except EngineUnavailable:
        return None
    for project, services in sorted(projects.items()):
        mesh = ContainerMesh(project, services)
        if any(dict(b.environment).get("KAFKA_PORT") == str(port) for b in mesh.brokers):
            return mesh
    return None


def state_word(service: ServiceState) -> str:
    """UP, STARTING, SICK (unhealthy), RESTART (waiting to start again) or DOWN."""
    if service.status == "restarting":
        return "RESTART"
    if service.status != "running":
        return "DOWN"
    return {"starting": "STARTING", "unhealthy": "SICK"}.get(service.health, "UP")


def service_line(label: str, service: ServiceState, now: float | None = None) -> str:
    """``label  STATE  container C  up U s  restarts R`` (and the last exit when not up)."""
    now = time.time() if now is None else now
    word = state_word(service)
    text = f"container {service.container}"
    if word in ("UP", "STARTING", "SICK") and service.started:
        text += f"  up {now - service.started:.0f} s"
    text += f"  restarts {service.restarts}"
    if word in ("DOWN", "RESTART"):
        text += f"  last exit: code {service.exit_code}"
    return f"{label:<8} {word:<6} {text}"


def detector_line(name: str, service: ServiceState, report: Mapping[str, Any], lag: str) -> str:
    """``detector NAME  STATE  1/1  container C  lag L  R records/s  records N  restarts K``."""
    word = state_word(service)
    rate = float(report.get("records_per_s", 0.0))
    return (
        f"detector {name:<14} {word:<7} 1/1  container {service.container}  lag {lag}  "
        f"{rate:.0f} records/s  records {int(report.get('records', 0))}  "
        f"restarts {service.restarts}"
    )


def read_report(container_name: str) -> dict[str, Any]:
    """The runtime's status file inside its container; empty when it cannot be read."""
    try:
        container = connect(timeout_s=3).containers.get(container_name)
        chunks, _ = container.get_archive(STATUS_FILE)
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as archive:
            member = archive.extractfile(archive.getmembers()[0])
            return dict(json.loads(member.read())) if member else {}
    except Exception:  # a container that is gone or restarting: the line says so without it
        return {}


def print_container_mesh(mesh: ContainerMesh, lag: Lag, say: Callable[[str], None]) -> None:
    """The lines of every service of ``mesh``; ``lag(group, topics)`` reads a group's lag."""
    for number, broker in enumerate(mesh.brokers):
        say(service_line("broker", broker) + (f"  (container mesh {mesh.project})" if number == 0
                                               else ""))  # fmt: skip
    for role, label in LABELS.items():
        service = mesh.service(role)
        if service is not None:
            say(service_line(label, service))
    names = mesh.names
    for service in (s for s in mesh.services if s.role == "detector"):
        reader = detector_reader(service.command, names)
        if reader is None:  # not one of the mesh's detector commands: shown, not measured
            say(detector_line(service.service, service, {}, "?"))
            continue
        lagging = lag(reader.group, list(reader.topics))
        say(detector_line(reader.name, service, read_report(service.container), lagging))
