"""The compose file as a Docker Swarm stack: ``mesh compose stack`` writes it, ``docker stack
deploy`` runs it.

``docker stack deploy`` reads the legacy v3 format and refuses the compose file as it is
(``services.ingest.depends_on must be a list``: v3 has no start conditions); it also ignores
``network_mode`` and ``restart``, and does not read ``.env``. So the stack is *derived* from
the compose file, never written by hand: Compose's own ``config`` output (``.env`` and the
environment interpolated), with for every service

* ``depends_on`` dropped: Swarm starts everything at once, and each service rides that out by
  itself: a detector or the ingest job that starts before its topics exist exits and is started
  again by the restart policy, the one-shot ``topics`` retries until the broker answers;
* ``network_mode: host`` replaced by the stack network ``hostnet``, the engine's ``host``
  network attached as an external network (what works without a bridge network);
* ``restart`` replaced by ``deploy.restart_policy`` with a delay (``on-failure`` for the one-shot
  ``topics``, ``any`` for the rest).

Everything else (images, commands, environment, health checks, labels, named volumes) is the
compose file's.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from hosting.containers.compose import ONE_SHOT, ComposeError, ComposeMesh, run_tool
from hosting.containers.engine import connect
from shared.settings import PROJECT_ROOT

STACK_VERSION = "3.8"
HOST_NETWORK = "hostnet"
#: Seconds Swarm waits before it starts a task again (it has no growing back-off of its own).
RESTART_DELAY = "5s"


def stack_document(config: dict[str, Any], one_shot: frozenset[str]) -> dict[str, Any]:
    """The stack file for ``config`` (Compose's interpolated ``config`` output)."""
    services = {}
    for name, service in config["services"].items():
        derived = {
            key: value
            for key, value in service.items()
            if key not in ("depends_on", "network_mode", "restart", "container_name")
        }
        if service.get("network_mode") == "host":
            derived["networks"] = [HOST_NETWORK]
        condition = "on-failure" if name in one_shot else "any"
        derived["deploy"] = {
            **service.get("deploy", {}),
            "restart_policy": {"condition": condition, "delay": RESTART_DELAY},
        }
        services[name] = derived
    document: dict[str, Any] = {"version": STACK_VERSION, "services": services}
    if any(HOST_NETWORK in s.get("networks", []) for s in services.values()):
        document["networks"] = {HOST_NETWORK: {"external": True, "name": "host"}}
    volumes = config.get("volumes")
    if volumes:
        document["volumes"] = {name: {} for name in volumes}
    return document


class SwarmStack(ComposeMesh):
    """The compose project deployed as a Swarm stack (``docker stack deploy``) instead.

    Swarm mode must be on (``docker swarm init --advertise-addr 127.0.0.1`` on one machine): the
    mesh never switches an engine's mode by itself. The stack file is written to
    ``.cache/stack/<project>.yml`` at every deploy.
    """

    project_label = "com.docker.stack.namespace"
    fail_fast = False

    def _start(self, config: dict[str, Any], timeout_s: float) -> None:
        import yaml

        client = connect()
        if client.info().get("Swarm", {}).get("LocalNodeState") != "active":
            raise ComposeError(
                "swarm mode is off on this engine: `docker swarm init --advertise-addr "
                "127.0.0.1` turns it on (or use `mesh compose up` without --swarm)"
            )
        path = stack_path(self.project)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(stack_document(config, ONE_SHOT), sort_keys=False))
        self._docker("stack", "deploy", "--compose-file", str(path), self.project)

    def _stop(self, volumes: bool) -> None:
        client = connect()
        self._docker("stack", "rm", self.project)
        deadline = time.monotonic() + 60
        label = {"label": f"{self.project_label}={self.project}"}
        while (client.containers.list(all=True, filters=label, ignore_removed=True)
               and time.monotonic() < deadline):  # fmt: skip
            time.sleep(1)
        if volumes:
            from docker.errors import APIError

            for volume in client.volumes.list(filters=label):
                try:
                    volume.remove(force=True)
                except APIError as error:
                    raise ComposeError(
                        f"volume {volume.name} is still in use ({error.explanation}): "
                        f"`mesh compose down --swarm -v` again once {self.project}'s tasks ended"
                    ) from None

    def _docker(self, *args: str) -> None:
        docker = shutil.which("docker")
        if docker is None:
            raise ComposeError("the docker command is not installed: apt-get install docker.io")
        run_tool([docker, *args], f"docker {args[0]} {args[1]}")


def stack_path(project: str) -> Path:
    return PROJECT_ROOT / ".cache" / "stack" / f"{project}.yml"
