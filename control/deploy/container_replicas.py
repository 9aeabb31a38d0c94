"""One replica of a detector release as one container: the docker backend of `mesh deploy`.

The twin of :class:`control.deploy.instances.Instance` (same ``start``/``stop``/``view``), so
deploy, rollout, scale, stop and `mesh status` work the same on either backend. Replica ``i``
of release ``seq`` of detector ``name`` is the container ``mesh-detector-<name>-r<seq>-<i>``
from the Python services image:

* the release folder is mounted read-only at ``/opt/mesh/release``: the container runs exactly
  the snapshot the registry keeps, so a rollback starts exactly the code that ran;
* ``$MESH_HOME/detector-<name>-r<seq>-<i>/`` is mounted as its home: the runtime's
  ``instance.json`` lands where the process backend's does, and the health check and
  `mesh status` read it the same way;
* it runs as the invoking user (no root in the container), on the host network, with the
  engine's ``unless-stopped`` restart policy: a crash-looping detector is restarted with the
  engine's growing back-off, and `mesh status` shows it DOWN with its last error;
* labels (``mesh.detector``, ``mesh.release``, ``mesh.replica``, ``mesh.home``) are how the
  backend finds its containers: it never touches a container without its own labels.

CPU and memory in `mesh status` come from the engine's statistics of the container.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.errors import APIError, ImageNotFound

from control.deploy.errors import DeployRefused
from control.deploy.instances import (
    InstanceView,
    replica_environment,
    replica_name,
    shadow_arguments,
    shadow_name,
)
from control.deploy.releases import Release
from hosting.containers.engine import connect
from hosting.containers.images import image
from shared.json_files import read_json
from shared.process_usage import ProcessUsage
from shared.settings import Settings

RELEASE_MOUNT = "/opt/mesh/release"
HOME_MOUNT = "/var/lib/mesh"
#: SIGTERM, then this long for the runtime to finish its batch, commit and leave its group.
STOP_TIMEOUT_S = 30
ROLE = "detector"
#: Lines of a removed container's output kept for `mesh logs`.
LOG_LINES_KEPT = 5000


@dataclass(frozen=True)
class ContainerStarted:
    """What a start or stop reports: the container and its main process as the host sees it."""

    name: str
    pid: int
    container_id: str


def labels_of(
    settings: Settings, name: str, seq: int, index: int, shadow: bool = False
) -> dict[str, str]:
    return {
        "mesh.shadow": "true" if shadow else "false",
        "mesh.role": ROLE,
        "mesh.backend": "docker",
        "mesh.home": str(Path(settings.home).resolve()),
        "mesh.detector": name,
        "mesh.release": str(seq),
        "mesh.replica": str(index),
    }


class ContainerInstance:
    """Replica ``index`` of release ``seq`` of detector ``name``, as a container."""

    def __init__(
        self,
        settings: Settings,
        name: str,
        seq: int,
        index: int,
        client: Any = None,
        shadow: bool = False,
    ):
        self.settings = settings
        self.name_of_detector, self.seq, self.index = name, seq, index
        self.shadow = shadow
        local_name = (shadow_name if shadow else replica_name)(name, seq, index)
        self.name = f"mesh-{local_name}"
        self.dir = Path(settings.home) / local_name
        self.report_file = self.dir / "instance.json"
        #: The output of the last container of this replica, kept when it is removed.
        self.log_file = self.dir / "container.log"
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = connect()
        return self._client

    def start(self, release: Release) -> tuple[ContainerStarted, bool]:
        """Create and start the container (a no-op when it already runs)."""
        container = self._container()
        if container is not None and container.status in ("running", "restarting"):
            return self._started(container), False
        if container is not None:  # an exited one of an earlier run: its name is needed
            self._keep_log_and_remove(container)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.report_file.unlink(missing_ok=True)
        try:
            container = self._run(release)
        except APIError as error:
            raise DeployRefused(f"the engine refused {self.name}: {error.explanation}") from None
        container.reload()
        return self._started(container), True

    def _run(self, release: Release) -> Any:
        return self.client.containers.run(
            require_image(self.client),
            ["python", "-m", "services.detector_runtime", RELEASE_MOUNT,
             "--instance-id", self.name,
             *(shadow_arguments(self.settings, self.name_of_detector) if self.shadow else [])],
            name=self.name,
            detach=True,
            labels=labels_of(
                self.settings, self.name_of_detector, self.seq, self.index, self.shadow
            ),
            environment=self._environment(),
            volumes={
                str(Path(release.path).resolve()): {"bind": RELEASE_MOUNT, "mode": "ro"},
                str(self.dir.resolve()): {"bind": HOME_MOUNT, "mode": "rw"},
            },
            network_mode="host",
            user=f"{os.getuid()}:{os.getgid()}",
            restart_policy={"Name": "unless-stopped"},
            init=True,  # a real init as pid 1 passes SIGTERM on and reaps children
        )  # fmt: skip

    def stop(self) -> ContainerStarted | None:
        """SIGTERM (the runtime commits and leaves its group), then remove the container; its
        output is kept in ``container.log`` for `mesh logs`."""
        container = self._container()
        if container is None:
            return None
        running = container.status in ("running", "restarting")
        started = self._started(container)
        if running:
            container.stop(timeout=STOP_TIMEOUT_S)
        self._keep_log_and_remove(container)
        return started if running else None

    def _keep_log_and_remove(self, container: Any) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_file.write_bytes(container.logs(tail=LOG_LINES_KEPT))
        container.remove(force=True)

    def running(self) -> bool:
        container = self._container()
        return container is not None and container.status in ("running", "restarting")

    def view(self) -> InstanceView:
        container = self._container()
        report = read_json(self.report_file) or {}
        if container is None:
            return InstanceView(self.name, self.index, self.seq, None, None, None, 0, None,
                                report, None)  # fmt: skip
        state = container.attrs["State"]
        supervisor = {"running": "running", "restarting": "backoff"}.get(state["Status"], "stopped")
        pid = int(state.get("Pid") or 0) or None
        return InstanceView(
            process=self.name,
            index=self.index,
            seq=self.seq,
            supervisor=supervisor,
            pid=pid if supervisor == "running" else None,
            child_started=_timestamp(state.get("StartedAt")),
            restarts=int(container.attrs.get("RestartCount", 0)),
            last_exit=_last_exit(state),
            report=report,
            usage=_usage(container) if supervisor == "running" else None,
        )

    def logs(self, lines: int) -> str:
        """The last ``lines`` of its output: the container's, or what was kept of the last one."""
        container = self._container()
        if container is not None:
            return str(container.logs(tail=lines).decode(errors="replace"))
        try:
            kept = self.log_file.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return "\n".join(kept[-lines:] if lines else [])

    def follow_logs(self) -> Any:
        """The container's output as it comes (a blocking iterator of byte chunks)."""
        container = self._container()
        return iter(()) if container is None else container.logs(stream=True, follow=True, tail=0)

    # helpers ---------------------------------------------------------------------------------
    def _container(self) -> Any:
        found = self.client.containers.list(
            all=True, filters={"name": f"^/{self.name}$"}, ignore_removed=True
        )
        mine = [
            c for c in found if c.labels.get("mesh.home") == str(Path(self.settings.home).resolve())
        ]
        if found and not mine:
            raise DeployRefused(
                f"a container named {self.name} exists that this mesh did not start "
                f"({found[0].short_id}): remove it, or use another MESH_HOME"
            )
        return mine[0] if mine else None

    def _environment(self) -> dict[str, str]:
        # The mesh's and OpenTelemetry's settings as the process backend passes them on (its
        # replicas get the whole environment), then where this replica finds everything.
        passed = {k: v for k, v in self.settings.environment.items()
                  if k.startswith(("MESH_", "OTEL_"))}  # fmt: skip
        return {
            **passed,
            **replica_environment(self.settings, HOME_MOUNT, f"{HOME_MOUNT}/instance.json"),
            "HOME": HOME_MOUNT,  # the invoking user has no home in the image
        }

    def _started(self, container: Any) -> ContainerStarted:
        return ContainerStarted(self.name, int(container.attrs["State"].get("Pid") or 0),
                                container.short_id)  # fmt: skip


def running_containers(
    settings: Settings, name: str, client: Any = None
) -> list[ContainerInstance]:
    """Every replica container of ``name`` this mesh runs now, whatever its release."""
    client = client or connect()
    filters = {"label": [f"mesh.detector={name}", f"mesh.home={Path(settings.home).resolve()}"]}
    found = []
    for container in client.containers.list(filters=filters, ignore_removed=True):
        labels = container.labels
        if labels.get("mesh.shadow") == "true":  # a shadow is not one of its replicas
            continue
        found.append(ContainerInstance(settings, name, int(labels["mesh.release"]),
                                       int(labels["mesh.replica"]), client))  # fmt: skip
    return sorted(found, key=lambda i: (i.seq, i.index))


def require_image(client: Any = None) -> str:
    """The services image's tag, or one line saying how to build it (no engine: one line too)."""

    tag = image("python")
    try:
        (client or connect()).images.get(tag)
    except ImageNotFound:
        raise DeployRefused(f"image {tag} not found: build it with `make images`") from None
    return tag


def _timestamp(text: str | None) -> float | None:
    if not text or text.startswith("0001-"):
        return None
    # The engine gives nanoseconds ("2026-11-24T12:00:00.123456789Z"); Python parses micro.
    head, _, fraction = text.rstrip("Z").partition(".")
    moment = datetime.datetime.fromisoformat(head).replace(tzinfo=datetime.UTC)
    return moment.timestamp() + (float("0." + fraction[:6]) if fraction else 0.0)


def _last_exit(state: dict[str, Any]) -> str | None:
    code = int(state.get("ExitCode") or 0)
    error = state.get("Error") or ""
    if code == 0 and not error:
        return None
    return (
        f"exit {code}"
        + (f": {error}" if error else "")
        + (" (OOM-killed)" if state.get("OOMKilled") else "")
    )


def _usage(container: Any) -> ProcessUsage | None:
    """CPU seconds and memory as the engine accounts them to the container (one sample)."""
    try:
        stats = container.stats(stream=False, one_shot=True)
    except Exception:  # gone between the listing and the sample
        return None
    cpu_ns = int(stats.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage", 0))
    memory = stats.get("memory_stats", {})
    cache = int(
        memory.get("stats", {}).get("inactive_file", memory.get("stats", {}).get("cache", 0))
    )
    used = max(int(memory.get("usage", 0)) - cache, 0)  # the engine's figure is without files
    return ProcessUsage(cpu_s=cpu_ns / 1e9, rss_bytes=used, private_bytes=used)
