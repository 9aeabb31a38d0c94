"""``mesh stop NAME`` and ``mesh logs NAME [-f]``: one service of the local mesh at a time.

NAME is ``ingest``, ``notifier`` or a detector's name (deployed, or a reference one under
detectors/). Stopping
a detector stops all its replicas and nothing else, and `mesh up` leaves it stopped until it is
deployed again: the other services keep running.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from control.deploy.backends import DOCKER, PROCESS, running_replicas
from control.deploy.instances import replicas, running_instances
from control.deploy.lifecycle import current_instances, known_names, stop
from control.deploy.registry import Registry
from control.launch.ingest import ingest_process
from control.launch.notifier import notifier_process
from shared.errors import ConfigError
from shared.local_process import LocalProcess
from shared.settings import Settings

if TYPE_CHECKING:
    from control.deploy.backends import Started


def register(subparsers: argparse._SubParsersAction) -> None:
    stop = subparsers.add_parser("stop", help="stop one service (a detector, ingest, notifier)")
    stop.add_argument("name", help="detector name, 'ingest' or 'notifier'")
    stop.set_defaults(handler=run_stop)
    logs = subparsers.add_parser("logs", help="show a service's log")
    logs.add_argument("name", help="detector name, 'ingest' or 'notifier'")
    logs.add_argument("-n", "--lines", type=int, default=50, help="lines to show (default 50)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.set_defaults(handler=run_logs)


def processes(settings: Settings, name: str) -> list[LocalProcess]:
    """The local processes of service ``name``; a one-line error naming the valid names if none.

    A detector's processes are its current replicas plus any other of its instances still
    running (a rollout in progress).
    """

    single = _single_services(settings)
    if name in single:
        return [single[name]]
    detectors = known_names(settings)
    if name not in detectors:
        known = ", ".join([*single, *detectors])
        raise ConfigError(f"no service called {name!r}; known: {known}")
    deployment = Registry(settings.home).get(name)
    found = {i.process.name: i.process for i in running_instances(settings, name)}
    if deployment is not None and deployment.backend == PROCESS:
        current = replicas(settings, name, deployment.current.seq, deployment.replicas)
        found.update({i.name: i.process for i in current})
    return [found[key] for key in sorted(found)]


def _single_services(settings: Settings) -> dict[str, LocalProcess]:
    """The services that run as one supervised local process each, by name."""

    return {"ingest": ingest_process(settings), "notifier": notifier_process(settings)}


def run_stop(args: argparse.Namespace, settings: Settings) -> int:
    stopped: Sequence[Started]
    if args.name in _single_services(settings):
        ended = (process.stop() for process in processes(settings, args.name))
        stopped = [info for info in ended if info is not None]
    else:
        processes(settings, args.name)  # an unknown name is refused with the known ones
        stopped = stop(settings, args.name)
    if not stopped:
        print(f"{args.name} was not running")
    for info in stopped:
        print(f"stopped {info.name} pid {info.pid}")
    return 0


def run_logs(args: argparse.Namespace, settings: Settings) -> int:
    if args.lines < 0:
        raise ConfigError("--lines must be 0 or more")
    containers = _containers(settings, args.name)
    if containers is not None:
        return _container_logs(containers, args.lines, args.follow)
    targets = processes(settings, args.name)
    for process in targets:
        prefix = f"[{process.name}] " if len(targets) > 1 else ""
        for line in process.tail_log(args.lines):
            print(prefix + line)
    if not args.follow:
        return 0
    positions = {p.name: _size(p) for p in targets}
    try:
        while True:
            for process in targets:
                positions[process.name] = _print_new(process, positions[process.name], len(targets))
            sys.stdout.flush()
            time.sleep(0.5)
    except KeyboardInterrupt:
        return 0


def _containers(settings: Settings, name: str) -> list[Any] | None:
    """The replica containers of ``name`` if it is deployed on the docker backend, else None."""

    deployment = Registry(settings.home).get(name)
    if deployment is None or deployment.backend != DOCKER:
        return None
    found = {i.name: i for i in running_replicas(settings, DOCKER, name)}
    found.update({i.name: i for i in current_instances(settings, deployment)})
    return [found[key] for key in sorted(found)]


def _container_logs(containers: list[Any], lines: int, follow: bool) -> int:
    """The engine keeps a container's output: print its last ``lines``, then (``follow``) what
    every replica writes, each line prefixed with its replica when there are several."""
    many = len(containers) > 1
    for instance in containers:
        prefix = f"[{instance.name}] " if many else ""
        for line in instance.logs(lines).splitlines():
            print(prefix + line)
    if not follow or not containers:
        return 0
    printing = threading.Lock()

    def follow_one(instance: Any) -> None:
        prefix = f"[{instance.name}] " if many else ""
        for chunk in instance.follow_logs():
            with printing:
                for line in chunk.decode(errors="replace").splitlines():
                    print(prefix + line, flush=True)

    for instance in containers:
        threading.Thread(target=follow_one, args=(instance,), daemon=True).start()
    try:
        while True:
            time.sleep(0.5)
    except KeyboardInterrupt:
        return 0


def _size(process: LocalProcess) -> int:
    try:
        return process.log_file.stat().st_size
    except FileNotFoundError:
        return 0


def _print_new(process: LocalProcess, position: int, services: int) -> int:
    """Print what was appended to the log since ``position``; return the new position."""
    try:
        with process.log_file.open("rb") as log:
            log.seek(position)
            chunk = log.read()
    except FileNotFoundError:
        return 0
    prefix = f"[{process.name}] " if services > 1 else ""
    for line in chunk.decode(errors="replace").splitlines():
        print(prefix + line)
    return position + len(chunk)
