"""``mesh deploy FOLDER``, ``mesh rollout NAME [FOLDER]`` and ``mesh scale NAME N``: ship and size
detectors in a running mesh.

Deploy and rollout validate first (manifest, import, input schemas, dry run) and refuse in one
line without touching anything that runs; none of the three ever restarts or pauses another
detector.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from control.deploy.backends import BACKENDS, PROCESS
from control.deploy.health import DEFAULT_HEALTH_S, DEFAULT_MAX_ERROR_RATE
from control.deploy.lifecycle import deploy
from control.deploy.rollout import rollout
from control.deploy.scale import scale
from shared.errors import ConfigError
from shared.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    deploy = subparsers.add_parser(
        "deploy", help="validate a detector folder and start its replicas"
    )
    deploy.add_argument("folder", type=Path, help="detector folder with manifest.yaml")
    deploy.add_argument(
        "--backend",
        choices=BACKENDS,
        default=PROCESS,
        help="run the replicas as local processes (default) or as containers of the "
        "mesh/python image (`make images`); rollout, scale and stop keep the deployment's",
    )
    deploy.set_defaults(handler=run_deploy)
    rollout = subparsers.add_parser(
        "rollout", help="replace a detector's replicas with a new version, one at a time"
    )
    rollout.add_argument("name", help="the deployed detector")
    rollout.add_argument(
        "folder", nargs="?", type=Path, help="new version's folder (default: where it came from)"
    )
    rollout.add_argument(
        "--health-seconds",
        type=float,
        default=DEFAULT_HEALTH_S,
        help="how long each new replica must stay healthy before an old one stops "
        f"({DEFAULT_HEALTH_S:g})",
    )
    rollout.add_argument(
        "--max-error-rate",
        type=float,
        default=DEFAULT_MAX_ERROR_RATE,
        help="share of failed records that makes a new replica unhealthy "
        f"({DEFAULT_MAX_ERROR_RATE:g})",
    )
    rollout.set_defaults(handler=run_rollout)
    scale = subparsers.add_parser("scale", help="run N replicas of a deployed detector")
    scale.add_argument("name", help="the deployed detector")
    scale.add_argument("replicas", type=int, help="how many replicas to run (1 or more)")
    scale.set_defaults(handler=run_scale)


def run_deploy(args: argparse.Namespace, settings: Settings) -> int:
    deploy(settings, args.folder, backend=args.backend)
    return 0


def run_rollout(args: argparse.Namespace, settings: Settings) -> int:
    if args.health_seconds < 0:
        raise ConfigError("--health-seconds must be 0 or more")
    if not 0 < args.max_error_rate <= 1:
        raise ConfigError("--max-error-rate must be a fraction in (0, 1]")
    report = rollout(settings, args.name, args.folder, args.health_seconds, args.max_error_rate)
    deployment = report.deployment
    print(
        f"rolled out {deployment.name} v{deployment.current.version} "
        f"({report.replaced} replica(s)); {report.duplicates}"
    )
    return 0


def run_scale(args: argparse.Namespace, settings: Settings) -> int:
    scale(settings, args.name, args.replicas)
    return 0
