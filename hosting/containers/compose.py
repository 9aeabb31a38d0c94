"""The container mesh as one unit: `mesh compose up|down|ps` around ``infra/compose``.

Compose itself starts what it is told and leaves the rest to you; this module adds what a user
would otherwise find out the hard way, each as one line, *before* anything starts:

* no engine answers (:mod:`hosting.containers.engine`);
* neither Compose v2 (``docker compose``) nor docker-compose 1.29 is installed;
* the compose file (or an override) is not valid: Compose's own first complaint;
* an image is missing: `make images`;
* a port of ``.env`` is taken by something else on 127.0.0.1.

Then it brings the mesh up and waits until every service is healthy (the one-shot ``topics``
service has exited 0). A service that does not get there in time is reported with its last log
lines, and the whole project is taken down again: no half-started mesh is left behind.

The settings are compose's own: ``infra/compose/.env``, overridden by the environment (a test
sets ``COMPOSE_PROJECT_NAME`` and the ports, for example).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hosting.containers.engine import connect
from shared.errors import MeshError
from shared.settings import PROJECT_ROOT

COMPOSE_DIR = PROJECT_ROOT / "infra" / "compose"
COMPOSE_FILE = COMPOSE_DIR / "docker-compose.yml"
#: The override that runs the broker as a 3-node cluster (`mesh compose up --brokers 3`).
CLUSTER_FILE = COMPOSE_DIR / "docker-compose.cluster.yml"
#: The port settings of each broker node, in node order (.env).
NODE_PORTS = ("MESH_KAFKA_PORT", "MESH_KAFKA_2_PORT", "MESH_KAFKA_3_PORT")
#: One-shot services: done when they exited 0.
ONE_SHOT = frozenset({"topics"})

Say = Callable[[str], None]


class ComposeError(MeshError):
    """The container mesh cannot be brought up (or down) as asked."""


def compose_command() -> list[str]:
    """Compose v2 (the docker CLI plugin) if installed, else docker-compose 1.x."""
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy:
        return [legacy]
    raise ComposeError(
        "Docker Compose is not installed: install the compose plugin (Compose v2), or as root "
        "apt-get install docker-compose"
    )


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of a compose ``.env`` (comments and blank lines skipped)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


@dataclass(frozen=True)
class ServiceState:
    service: str
    container: str
    #: the engine's: running, restarting, exited, ...
    status: str
    #: healthy, unhealthy, starting, or "" without a health check
    health: str
    exit_code: int
    restarts: int
    #: the service's ``mesh.role`` label (broker, ingest, detector, notifier, ...)
    role: str = ""
    #: when the container last started (seconds since the epoch); 0 when it never ran
    started: float = 0.0
    #: its command and environment, as the engine started it
    command: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()

    @property
    def ready(self) -> bool:
        if self.service in ONE_SHOT:
            return self.status == "exited" and self.exit_code == 0
        return self.status == "running" and self.health in ("healthy", "")

    @property
    def failed(self) -> bool:
        if self.service in ONE_SHOT:
            return self.status == "exited" and self.exit_code != 0
        return self.status in ("exited", "dead") or self.health == "unhealthy"

    def line(self) -> str:
        health = f" ({self.health})" if self.health else ""
        exited = f" exit {self.exit_code}" if self.status == "exited" else ""
        return f"{self.service:<20} {self.status}{health}{exited}  restarts {self.restarts}"


class ComposeMesh:
    """The compose project of ``files`` under the settings of ``.env`` and ``environ``."""

    def __init__(
        self,
        files: tuple[Path, ...] = (COMPOSE_FILE,),
        environ: Mapping[str, str] | None = None,
        say: Say = print,
    ) -> None:
        self.files = files
        self.environ = dict(os.environ if environ is None else environ)
        self.say = say
        #: the settings of .env; the environment overrides them (``values``)
        self.env_file = read_env_file(COMPOSE_DIR / ".env")
        self.values = {**self.env_file, **self.environ}
        self.project = self.values.get("COMPOSE_PROJECT_NAME", "detector-mesh")

    @property
    def brokers(self) -> int:
        """Broker nodes the files run: three with the cluster override, else one."""
        return 3 if CLUSTER_FILE in self.files else 1

    @property
    def bootstrap(self) -> str:
        """Every broker node of the files, as a client on the host reaches it."""
        ports = (self.values[key] for key in NODE_PORTS[: self.brokers])
        return ",".join(f"127.0.0.1:{port}" for port in ports)

    # the verbs -------------------------------------------------------------------------------
    def up(self, timeout_s: float = 300.0) -> list[ServiceState]:
        client = connect()
        config = self.config()
        running = {s.service for s in self.states(client) if s.status == "running"}
        self._check_images(client, config)
        if not running:
            self._check_ports()
        started = time.monotonic()
        try:
            try:
                # Compose itself waits here for the start conditions (a healthy broker, the
                # one-shot's exit): bounded by the same timeout.
                self._start(config, timeout_s)
            except ComposeError as error:
                raise self._why_not_up(client, error) from None
            left_s = timeout_s - (time.monotonic() - started)
            states = self.wait_ready(client, set(config["services"]), left_s)
        except ComposeError:
            self.say(f"taking {self.project} down again: it did not come up")
            self._stop(volumes=False)
            raise
        self.say(f"{self.project}: {len(states)} services ready in "
                 f"{time.monotonic() - started:.0f} s")  # fmt: skip
        return states

    def down(self, volumes: bool = False) -> None:
        connect()
        self._stop(volumes)

    # what differs on Swarm (hosting.containers.stack) ----------------------------------------
    #: The label the engine puts on every container of the project.
    project_label = "com.docker.compose.project"
    #: A service whose container exited has failed (Swarm starts a new task instead).
    fail_fast = True

    def _start(self, config: dict[str, Any], timeout_s: float) -> None:
        self._compose("up", "-d", "--remove-orphans", timeout_s=timeout_s)

    def _stop(self, volumes: bool) -> None:
        self._compose("down", "--remove-orphans", *(["--volumes"] if volumes else []))

    def config(self) -> dict[str, Any]:
        """The compose file as Compose reads it (interpolated); its first complaint if invalid."""
        import yaml

        result = self._compose("config", check=False)
        if result.returncode != 0:
            complaint = (result.stderr or result.stdout).strip().splitlines()
            raise ComposeError(
                f"{', '.join(str(f) for f in self.files)} is not a valid compose file: "
                f"{complaint[-1] if complaint else 'compose exited ' + str(result.returncode)}"
            )
        return dict(yaml.safe_load(result.stdout))

    def states(self, client: Any = None) -> list[ServiceState]:
        """Each service's newest container (Swarm keeps the exited ones of earlier tasks)."""
        return service_states(client or connect()).get(self.project, [])

    def wait_ready(self, client: Any, expected: set[str], timeout_s: float) -> list[ServiceState]:
        """Until every service of ``expected`` is ready; one line naming the first that failed
        (or is still not ready at the end) and its last log lines."""
        deadline = time.monotonic() + timeout_s
        while True:
            states = self.states(client)
            by_service = {s.service: s for s in states}
            failed = [s for s in states if s.failed and self.fail_fast]
            if failed:
                raise self._failed(client, failed[0])
            if expected <= set(by_service) and all(by_service[n].ready for n in expected):
                return states
            if time.monotonic() > deadline:
                waiting = [n for n in sorted(expected) if n not in by_service
                           or not by_service[n].ready]  # fmt: skip
                first = by_service.get(waiting[0])
                detail = self._last_lines(client, first) if first else "not created"
                raise ComposeError(f"not ready within {timeout_s:.0f} s: {', '.join(waiting)}; "
                                   f"{waiting[0]}: {detail}")  # fmt: skip
            time.sleep(2)

    # checks ----------------------------------------------------------------------------------
    def _check_images(self, client: Any, config: dict[str, Any]) -> None:
        from docker.errors import ImageNotFound

        for name, service in sorted(config["services"].items()):
            try:
                client.images.get(service["image"])
            except ImageNotFound:
                raise ComposeError(
                    f"image {service['image']} (service {name}) is missing: build the images "
                    "with `make images`"
                ) from None

    def _check_ports(self) -> None:
        """The port settings of .env that the files use (as the environment may override them)
        are free: a single broker's mesh does not need the cluster's other nodes' ports."""
        used = "".join(file.read_text() for file in self.files)
        for key in sorted(self.env_file):
            value = self.values.get(key, "")
            if "${" + key + "}" not in used:
                continue
            if key.endswith("_PORT") and value.isdigit() and not _free(int(value)):
                raise ComposeError(
                    f"port {value} ({key}) is in use on 127.0.0.1: set another in "
                    f"{COMPOSE_DIR / '.env'} (or the environment), or stop what listens there"
                )

    # helpers ---------------------------------------------------------------------------------
    def _compose(
        self, *args: str, check: bool = True, timeout_s: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        command = [*compose_command(), "--project-directory", str(COMPOSE_DIR)]
        for file in self.files:
            command += ["-f", str(file)]
        command += ["-p", self.project, *args]
        return run_tool(command, f"compose {args[0]}", self.environ, timeout_s, check=check)

    def _why_not_up(self, client: Any, error: ComposeError) -> ComposeError:
        """Compose's own complaint, with the service that failed and its last log lines."""
        failed = [s for s in self.states(client) if s.failed]
        return self._failed(client, failed[0]) if failed else error

    def _failed(self, client: Any, state: ServiceState) -> ComposeError:
        return ComposeError(f"{state.service} failed: {state.line().strip()}; "
                            f"{self._last_lines(client, state)}")  # fmt: skip

    def _last_lines(self, client: Any, state: ServiceState, lines: int = 3) -> str:
        try:
            text = client.containers.get(state.container).logs(tail=lines).decode(errors="replace")
        except Exception:  # removed meanwhile
            return "(no log)"
        return "last log lines: " + " | ".join(text.strip().splitlines()[-lines:])


def service_states(client: Any = None) -> dict[str, list[ServiceState]]:
    """Every container mesh on the engine (compose projects and Swarm stacks of the compose
    file, told by the ``mesh.role`` label every service of it carries): project -> each
    service's newest container (Swarm keeps the exited ones of earlier tasks)."""
    client = client or connect(timeout_s=3)
    projects: dict[str, dict[str, Any]] = {}
    found = client.containers.list(all=True, filters={"label": "mesh.role"}, ignore_removed=True)
    for container in sorted(found, key=lambda c: c.attrs["Created"]):
        labels = container.labels
        project = labels.get("com.docker.compose.project") or labels.get(
            "com.docker.stack.namespace")  # fmt: skip
        if not project:  # a detector replica of `mesh deploy --backend docker`: shown above
            continue
        service = labels.get("com.docker.compose.service") or str(
            labels.get("com.docker.swarm.service.name", container.name)
        ).removeprefix(f"{project}_")
        projects.setdefault(project, {})[service] = container  # the newest wins
    return {
        project: [_state(service, c) for service, c in sorted(services.items())]
        for project, services in projects.items()
    }


def run_tool(
    command: list[str],
    what: str,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
    *,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run compose or the docker CLI; its last line of complaint as a :class:`ComposeError`
    (``check``), and a bounded wait."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env,
                                timeout=max(timeout_s, 1.0))  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ComposeError(f"{what} did not finish within {timeout_s:.0f} s") from None
    if check and result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise ComposeError(f"{what} failed: {lines[-1] if lines else result.returncode}")
    return result


def _state(service: str, container: Any) -> ServiceState:
    attrs = container.attrs
    state, config = attrs["State"], attrs.get("Config") or {}
    return ServiceState(
        service=service,
        container=container.name,
        status=state["Status"],
        health=(state.get("Health") or {}).get("Status", ""),
        exit_code=int(state.get("ExitCode") or 0),
        restarts=int(attrs.get("RestartCount", 0)),
        role=str((config.get("Labels") or {}).get("mesh.role", "")),
        started=_epoch(str(state.get("StartedAt") or "")),
        command=tuple(str(a) for a in config.get("Cmd") or ()),
        environment=tuple(_pair(e) for e in config.get("Env") or () if "=" in e),
    )


def _pair(variable: str) -> tuple[str, str]:
    name, _, value = variable.partition("=")
    return name, value


def _epoch(stamp: str) -> float:
    """The engine's RFC 3339 time (nanoseconds, ``Z``) in seconds since the epoch; 0 for the
    zero time of a container that never started."""
    if not stamp or stamp.startswith("0001-"):
        return 0.0
    head, _, fraction = stamp.rstrip("Z").partition(".")
    moment = datetime.fromisoformat(head).replace(tzinfo=UTC)
    return moment.timestamp() + float(f"0.{fraction or 0}")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
