"""Where a detector's replicas run: local processes (the default) or containers.

Deploy, rollout, scale, stop and `mesh status` see one interface, :class:`Replica`; a
deployment remembers its backend (``deployment.json``), so every later command on it runs its
replicas the same way. The process backend is :mod:`control.deploy.instances`, the docker one
:mod:`control.deploy.container_replicas`.

The docker one is imported inside the functions that choose it, on purpose: it loads the
``docker`` SDK, 151 ms of every `mesh` command's start (``python -X importtime -c "import
docker"``, 2026-11-27), which a mesh of processes never needs.
"""

from __future__ import annotations

from typing import Protocol

from control.deploy.instances import Instance, InstanceView, running_instances
from control.deploy.instances import replicas as process_replicas
from control.deploy.registry import Deployment
from control.deploy.releases import Release
from hosting.containers.engine import connect
from shared.errors import ConfigError
from shared.settings import Settings

PROCESS, DOCKER = "process", "docker"
BACKENDS = (PROCESS, DOCKER)


class Started(Protocol):
    """What starting or stopping a replica reports: the process (:class:`ProcessInfo`) or the
    container (:class:`~control.deploy.container_replicas.ContainerStarted`) and its main pid."""

    @property
    def name(self) -> str: ...
    @property
    def pid(self) -> int: ...


class Replica(Protocol):
    """Replica ``index`` of release ``seq`` of one detector, whatever runs it."""

    name: str
    index: int
    seq: int

    def start(self, release: Release) -> tuple[Started, bool]: ...
    def stop(self) -> Started | None: ...
    def view(self) -> InstanceView: ...
    def running(self) -> bool: ...


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")
    return backend


def preflight(settings: Settings, backend: str) -> None:
    """What a backend needs before a deployment is written, or one line why not: for containers,
    an engine that answers and the services image (`make images`)."""
    if check_backend(backend) == DOCKER:
        from control.deploy.container_replicas import require_image

        require_image()


def replica(settings: Settings, backend: str, name: str, seq: int, index: int) -> Replica:
    if check_backend(backend) == DOCKER:
        from control.deploy.container_replicas import ContainerInstance

        return ContainerInstance(settings, name, seq, index)
    return Instance(settings, name, seq, index)


def replicas(settings: Settings, backend: str, name: str, seq: int, count: int) -> list[Replica]:
    if check_backend(backend) == DOCKER:
        from control.deploy.container_replicas import ContainerInstance

        client = connect()  # one connection for all of them
        return [ContainerInstance(settings, name, seq, i, client) for i in range(count)]
    return list(process_replicas(settings, name, seq, count))


def running_replicas(settings: Settings, backend: str, name: str) -> list[Replica]:
    """Every replica of ``name`` running now on ``backend``, whatever its release."""
    if check_backend(backend) == DOCKER:
        from control.deploy.container_replicas import running_containers

        return list(running_containers(settings, name))
    return list(running_instances(settings, name))


def shadow_replicas(settings: Settings, deployment: Deployment) -> list[Replica]:
    """The replicas of ``deployment``'s shadow on its backend (none without a shadow)."""
    release = deployment.shadow_release
    if release is None or deployment.shadow is None:
        return []
    count, name = int(deployment.shadow["replicas"]), deployment.name
    if check_backend(deployment.backend) == DOCKER:
        from control.deploy.container_replicas import ContainerInstance

        client = connect()
        return [ContainerInstance(settings, name, release.seq, i, client, shadow=True)
                for i in range(count)]  # fmt: skip
    return [Instance(settings, name, release.seq, i, shadow=True) for i in range(count)]
