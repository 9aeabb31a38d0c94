"""Where a process finds the mesh's Kafka, trace backend and InfluxDB: one way, for every process.

A setting (MESH_BOOTSTRAP_SERVERS, MESH_OTLP_ENDPOINT, MESH_INFLUX_URL) always wins. Without one,
the local servers `mesh up` starts publish their address in a file under ``$MESH_HOME/<server>/``
and this module reads it, only while the server's process is alive (a dead broker's address is
"no Kafka broker: start one", not a client that times out). The control plane's server
managers (:mod:`hosting.servers`) write these files; the services only read them, so a service
never imports the code that starts a server.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from shared.errors import MeshError
from shared.local_process import LocalProcess
from shared.settings import Settings

__all__ = [
    "BROKER",
    "INFLUXDB",
    "TRACE_BACKEND",
    "BackendInfo",
    "NoBrokerError",
    "bootstrap_file",
    "broker_addresses",
    "broker_process_name",
    "cluster_file",
    "first_broker",
    "influx_url_file",
    "local_broker_names",
    "local_influx_url",
    "local_trace_backend",
    "resolve_bootstrap",
    "resolve_otlp_endpoint",
    "trace_backend_file",
]


@dataclass(frozen=True)
class BackendInfo:
    """Where the running trace backend listens."""

    #: OTLP/HTTP base URL: set it as MESH_OTLP_ENDPOINT (spans go to ``<it>/v1/traces``).
    otlp_endpoint: str
    #: Jaeger UI and its HTTP API.
    ui_url: str


#: The local processes (and their folders under MESH_HOME) of the three local servers.
BROKER, INFLUXDB, TRACE_BACKEND = "kafka", "influxdb", "jaeger"


class NoBrokerError(MeshError):
    """No Kafka is configured and no local broker is running."""


def bootstrap_file(home: Path) -> Path:
    """Where a running local broker publishes its ``host:port`` (once it answers)."""
    return home / BROKER / "bootstrap"


def cluster_file(home: Path) -> Path:
    """Where a local multi-broker cluster keeps its nodes' ports and id (absent: one broker)."""
    return home / BROKER / "cluster.json"


def broker_process_name(node: int) -> str:
    """The local process (and folder under MESH_HOME) of Kafka node ``node``: ``kafka`` for
    node 1 (the single broker's, kept for it), ``kafka-N`` for the others of a local cluster."""
    return BROKER if node == 1 else f"{BROKER}-{node}"


def _cluster_plan(home: Path) -> dict:
    """The raw plan of a local cluster (:mod:`hosting.servers.cluster_plan` writes and checks
    it), or {} for one broker or none."""
    try:
        plan = json.loads(cluster_file(home).read_text())
        return plan if isinstance(plan, dict) and isinstance(plan.get("nodes"), list) else {}
    except (OSError, ValueError):
        return {}


def local_broker_names(home: Path) -> list[str]:
    """The local processes of this MESH_HOME's Kafka, node 1 first."""
    nodes = len(_cluster_plan(home).get("nodes", [])) or 1
    return [broker_process_name(node) for node in range(1, nodes + 1)]


def _cluster_bootstrap(home: Path) -> str:
    """Every node's address of a local cluster (its plan names them all), "" for one broker."""
    plan = _cluster_plan(home)
    try:
        return ",".join(f"{plan['host']}:{node['port']}" for node in plan.get("nodes", []))
    except (KeyError, TypeError):
        return ""


def resolve_bootstrap(settings: Settings) -> str:
    """The bootstrap servers to use: MESH_BOOTSTRAP_SERVERS, else the local broker's address
    (every node's, for a local cluster: it is found while any one of them runs)."""
    if settings.bootstrap_servers:
        return settings.bootstrap_servers
    address = ""
    names = local_broker_names(settings.home)
    if any(LocalProcess(name, settings.home).running() is not None for name in names):
        address = _cluster_bootstrap(settings.home)
        if not address:
            with contextlib.suppress(FileNotFoundError):
                address = bootstrap_file(settings.home).read_text().strip()
    if not address:
        raise NoBrokerError(
            "no Kafka broker: start one with `mesh broker start` (or `mesh up`), "
            "or set MESH_BOOTSTRAP_SERVERS=host:port"
        )
    return address


def first_broker(bootstrap: str) -> tuple[str, int]:
    """The host and port of a bootstrap list's first broker (``host:port``, ``[::1]:port`` or
    ``PROTOCOL://host:port``); ValueError when it names no port."""
    return broker_addresses(bootstrap)[0]


def broker_addresses(bootstrap: str) -> list[tuple[str, int]]:
    """Every broker a bootstrap list names, in order, as (host, port); ValueError when one names
    no port. A client that talks to one broker itself tries them in turn: any may be down."""
    found = []
    for entry in bootstrap.split(","):
        if entry.strip():
            host, _, port = entry.strip().split("://", 1)[-1].rpartition(":")
            found.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not found:
        raise ValueError(f"no broker in bootstrap list {bootstrap!r}")
    return found


def influx_url_file(home: Path) -> Path:
    """Where a running local InfluxDB publishes ``http://host:port``."""
    return home / INFLUXDB / "url"


def trace_backend_file(home: Path) -> Path:
    """Where a running local trace backend publishes its OTLP and UI addresses (JSON)."""
    return home / TRACE_BACKEND / "endpoints.json"


def local_influx_url(settings: Settings) -> str | None:
    """The URL of the mesh's own InfluxDB if its process is alive (it may still be starting);
    None too when its files cannot be read (the aggregator asks again later)."""
    try:
        if LocalProcess(INFLUXDB, settings.home).running() is None:
            return None
        return influx_url_file(settings.home).read_text().strip() or None
    except OSError:
        return None


def local_trace_backend(settings: Settings) -> BackendInfo | None:
    """Where the mesh's own trace backend listens if its process is alive."""
    if LocalProcess(TRACE_BACKEND, settings.home).running() is None:
        return None
    try:
        return BackendInfo(**json.loads(trace_backend_file(settings.home).read_text()))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def resolve_trace_backend(settings: Settings) -> BackendInfo | None:
    """The trace backend to read traces from: MESH_TRACE_UI_URL (with MESH_OTLP_ENDPOINT), else
    the local one if it runs, else None."""
    if settings.trace_ui_url:
        return BackendInfo(settings.otlp_endpoint, settings.trace_ui_url.rstrip("/"))
    return local_trace_backend(settings)


def resolve_otlp_endpoint(settings: Settings) -> str:
    """Where the mesh's services send spans: MESH_OTLP_ENDPOINT, else the local trace backend if
    it runs (``mesh up`` starts it when built), else "" (tracing off)."""
    if settings.otlp_endpoint:
        return settings.otlp_endpoint
    info = local_trace_backend(settings)
    return info.otlp_endpoint if info is not None else ""
