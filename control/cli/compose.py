"""``mesh compose up|down|ps``: the whole mesh in containers (infra/compose), checked first.

Same services, topics and settings as the embedded mesh; see :mod:`hosting.containers.compose`
for what is checked before anything starts and how a failed start is undone. ``up`` returns once
the mesh can alert, as `mesh up` does (:mod:`control.compose_readiness`), unless ``--no-wait``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from control.cli.arguments import add_wait_options
from control.compose_readiness import compose_readers, compose_settings
from control.readiness import wait_until_ready
from hosting.containers.compose import CLUSTER_FILE, COMPOSE_FILE, ComposeMesh
from hosting.containers.stack import SwarmStack
from shared.errors import ConfigError
from shared.settings import Settings

if TYPE_CHECKING:
    from hosting.containers.compose import ComposeMesh


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compose", help="run the mesh in containers (infra/compose; images from `make images`)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    up = actions.add_parser(
        "up", help="check, start, wait until every service is healthy and the mesh can alert"
    )
    up.add_argument("--timeout", type=float, default=300.0,
                    help="seconds to wait for healthy containers (300)")  # fmt: skip
    add_wait_options(up, until="once the containers are healthy")
    up.add_argument(
        "--brokers", type=int, default=1, metavar="N",
        help="broker nodes: 1 (default) or 3, a KRaft cluster with every topic on 3 replicas "
        "(infra/compose/docker-compose.cluster.yml)",
    )  # fmt: skip
    up.add_argument(
        "--file", "-f", action="append", type=Path, default=[],
        help="an override file on top of infra/compose/docker-compose.yml (repeatable), e.g. "
        "infra/compose/docker-compose.bridge.yml",
    )  # fmt: skip
    up.set_defaults(handler=run_up)
    _swarm_option(up)
    down = actions.add_parser("down", help="stop and remove the containers")
    down.add_argument(
        "--volumes", "-v", action="store_true",
        help="also delete the volumes: the broker's data, InfluxDB's, the Spark checkpoints",
    )  # fmt: skip
    down.set_defaults(handler=run_down)
    _swarm_option(down)
    ps = actions.add_parser("ps", help="each service's state, health and restarts")
    ps.set_defaults(handler=run_ps)
    _swarm_option(ps)


def _swarm_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--swarm", action="store_true",
        help="as a Docker Swarm stack (docker stack deploy) derived from the compose file",
    )  # fmt: skip


def _mesh(swarm: bool, files: list[Path] | None = None, brokers: int = 1) -> ComposeMesh:
    for file in files or []:
        if not file.is_file():
            raise ConfigError(f"compose file {file} not found")
    kind = SwarmStack if swarm else ComposeMesh
    cluster = (CLUSTER_FILE,) if brokers == 3 else ()
    return kind((COMPOSE_FILE, *cluster, *(f.resolve() for f in files or [])))


def run_up(args: argparse.Namespace, settings: Settings) -> int:
    if args.timeout <= 0:
        raise ConfigError("--timeout must be more than 0 seconds")
    if args.brokers not in (1, 3):
        raise ConfigError(f"--brokers {args.brokers}: the container mesh runs 1 broker or a "
                          "cluster of 3")  # fmt: skip
    if args.brokers == 3 and args.swarm:
        raise ConfigError("--brokers 3 is for compose; a Swarm stack runs one broker")
    started = time.monotonic()
    mesh = _mesh(args.swarm, args.file, args.brokers)
    for state in mesh.up(args.timeout):
        print(state.line())
    if not args.wait:
        return 0
    target = compose_settings(settings, mesh.values, mesh.bootstrap)
    look = (f"see `mesh compose ps{' --swarm' if args.swarm else ''}` and the {{service}} "
            "container's log (docker logs)")  # fmt: skip
    if not wait_until_ready(target, args.wait_timeout, readers=compose_readers(mesh.config(),
                            target), look=look):  # fmt: skip
        return 1
    print(f"{mesh.project}: ready to alert {time.monotonic() - started:.0f} s after "
          "`mesh compose up` started")  # fmt: skip
    return 0


def run_down(args: argparse.Namespace, settings: Settings) -> int:
    # with the cluster's file, so a cluster's other nodes and their volumes go too
    mesh = _mesh(args.swarm, brokers=1 if args.swarm else 3)
    mesh.down(volumes=args.volumes)
    print(f"{mesh.project}: down" + (" (volumes deleted)" if args.volumes else ""))
    return 0


def run_ps(args: argparse.Namespace, settings: Settings) -> int:
    mesh = _mesh(args.swarm)
    states = mesh.states()
    if not states:
        print(f"{mesh.project}: no containers (`mesh compose up` starts them)")
    for state in states:
        print(state.line())
    return 0
