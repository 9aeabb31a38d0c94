"""A Docker engine for the container mesh and its tests, when none runs: Debian's ``dockerd``.

Started the way this kind of machine allows (``--bridge=none --iptables=false``: no bridge
network, no firewall changes; containers use the host network), as an ordinary local server
under ``$MESH_HOME/dockerd/``. It keeps Docker's default data root (``/var/lib/docker``), so the
images `make images` built survive it and the next start. It needs root; an engine that already
answers (somebody's, or a system service) is used as it is and never stopped by the mesh.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hosting.servers.local_server import LocalServer
from shared.errors import MeshError
from shared.settings import Settings

SOCKET = Path("/var/run/docker.sock")


class DockerdError(MeshError):
    """The engine could not be started."""


class LocalDockerd(LocalServer[str]):
    """Start, find and stop the engine whose files live in ``settings.home / "dockerd"``."""

    name = "dockerd"
    program = "dockerd"
    error = DockerdError
    foreign_env = ("DOCKER_",)

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, start_timeout_s=60.0)

    def _launch_plan(self) -> tuple[list[str], str]:
        if os.geteuid() != 0:
            raise DockerdError("starting a Docker engine needs root: run dockerd as root, or "
                               "point DOCKER_HOST at a running engine")  # fmt: skip
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            raise DockerdError("dockerd is not installed: as root, apt-get install docker.io")
        command = [
            dockerd, "--bridge=none", "--iptables=false", "--ip6tables=false",
            "--host", f"unix://{SOCKET}", "--pidfile", str(self.dir / "dockerd.pid"),
        ]  # fmt: skip
        return command, f"unix://{SOCKET}"

    def _ready(self, info: str) -> bool:
        import docker

        try:
            docker.DockerClient(base_url=info, version="auto", timeout=2).ping()
            return True
        except Exception:  # not up yet: the next probe asks again
            return False

    def _describe(self, info: str) -> str:
        return f"on {info}"

    def _published(self) -> str | None:
        return f"unix://{SOCKET}" if self.process.running() is not None else None

    def _publish(self, info: str) -> None:
        """The socket is Docker's default path: clients find it without a file of ours."""

    def _unpublish(self) -> None:
        """Nothing published (see :meth:`_publish`)."""
