"""The Docker engine the container backend talks to, or one line that says why there is none.

The engine is found the way the ``docker`` CLI finds it (``DOCKER_HOST``, else the local socket).
Its API version is negotiated, because Debian's engine (20.10) is older than the SDK's default.
"""

from __future__ import annotations

from typing import Any

from shared.errors import MeshError

START_HINT = (
    "start one as root with `dockerd --bridge=none --iptables=false` (Debian: apt-get install "
    "docker.io), or point DOCKER_HOST at one"
)


class EngineUnavailable(MeshError):
    """No Docker engine answers: nothing was started or changed."""


def connect(timeout_s: float = 10.0) -> Any:
    """A ``docker.DockerClient`` whose engine answered a ping."""
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(version="auto", timeout=int(timeout_s))
        client.ping()
    except DockerException as error:
        reason = _reason(error)
        if reason == "permission denied":
            raise EngineUnavailable(
                "the Docker engine's socket refuses this user (permission denied): run as root, "
                "or add the user to the docker group"
            ) from None
        raise EngineUnavailable(f"no Docker engine answers ({reason}): {START_HINT}") from None
    return client


def _reason(error: Exception) -> str:
    text = str(error)
    for known in ("No such file or directory", "Connection refused", "Permission denied"):
        if known in text:
            return known.lower()
    return text.splitlines()[0][:160] if text else type(error).__name__
