"""A compose mesh of a test or benchmark run: its own project name, ports and volumes, so it
never meets the user's (``infra/compose/.env``) or another run's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hosting.containers.compose import ComposeMesh
from hosting.servers.ports import ephemeral_port
from shared.settings import Settings

#: Every port setting of .env: a test mesh takes free ones, so neither a mesh of the user's nor a
#: leftover of an earlier run (a restart policy brings containers back with their engine) is in
#: its way.
PORTS = ("MESH_KAFKA_PORT", "MESH_KAFKA_CONTROLLER_PORT", "MESH_KAFKA_2_PORT",
         "MESH_KAFKA_2_CONTROLLER_PORT", "MESH_KAFKA_3_PORT", "MESH_KAFKA_3_CONTROLLER_PORT",
         "MESH_INFLUX_PORT", "MESH_INFLUX_RPC_PORT", "MESH_OTLP_PORT", "MESH_TRACE_UI_PORT",
         "MESH_WEBHOOK_PORT")  # fmt: skip


def compose_environment(project: str) -> tuple[dict[str, str], dict[str, int]]:
    """The environment for compose (this process's, plus the project name and a free port for
    every port setting of .env), and those ports."""
    ports: dict[str, int] = {}
    for name in PORTS:
        port = ephemeral_port("127.0.0.1")
        while port in ports.values():
            port = ephemeral_port("127.0.0.1")
        ports[name] = port
    env = {**os.environ, "COMPOSE_PROJECT_NAME": project, **{k: str(v) for k, v in ports.items()}}
    return env, ports


@dataclass(frozen=True)
class RunningMesh:
    """A compose mesh of this test session, on its own ports, project name and volumes."""

    compose: ComposeMesh
    ports: dict[str, int]
    home: Path

    @property
    def bootstrap(self) -> str:
        """Every broker node of the mesh (one, or a cluster's three)."""
        return self.compose.bootstrap

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
