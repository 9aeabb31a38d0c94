"""``mesh deploy FOLDER``, ``mesh rollout NAME [FOLDER] [--shadow]``, ``mesh shadow NAME``,
``mesh scale NAME N`` and ``mesh autoscale NAME``: ship, try out and size detectors in a running
mesh.

Deploy and rollout validate first (manifest, import, input schemas, dry run) and refuse in one
line without touching anything that runs; none of the three ever restarts or pauses another
detector.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from control.autoscale.report import policy_text
from control.deploy.autoscale_choice import effective_policy, set_autoscale
from control.deploy.backends import BACKENDS, PROCESS
from control.deploy.errors import DeployRefused
from control.deploy.health import DEFAULT_HEALTH_S, DEFAULT_MAX_ERROR_RATE
from control.deploy.lifecycle import deploy
from control.deploy.registry import Registry
from control.deploy.rollout import rollout
from control.deploy.scale import scale
from control.deploy.shadow import abandon_shadow, promote_shadow, start_shadow
from control.deploy.shadow_report import compare, comparison_text
from control.launch.autoscaler import autoscaler_process
from shared.detector.autoscale import DEFAULT_SCALE_DOWN_AFTER_S
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
    rollout.add_argument(
        "--shadow", action="store_true",
        help="run the new version beside the live one on the same records, alerts to "
        "alerts.shadow (never notified); `mesh shadow NAME` compares, promotes or abandons",
    )  # fmt: skip
    rollout.set_defaults(handler=run_rollout)
    shadow = subparsers.add_parser(
        "shadow", help="compare a detector's shadow version with the live one; promote or abandon"
    )
    shadow.add_argument("name", help="the deployed detector")
    shadow.add_argument("--json", action="store_true", help="the comparison as one JSON object")
    action = shadow.add_mutually_exclusive_group()
    action.add_argument(
        "--promote", action="store_true",
        help="stop the shadow and roll its version out as the live one (the live group keeps "
        "its offsets)",
    )  # fmt: skip
    action.add_argument(
        "--abandon", action="store_true", help="stop the shadow and delete its group and state"
    )
    shadow.set_defaults(handler=run_shadow)
    scale = subparsers.add_parser("scale", help="run N replicas of a deployed detector")
    scale.add_argument("name", help="the deployed detector")
    scale.add_argument("replicas", type=int, help="how many replicas to run (1 or more)")
    scale.set_defaults(handler=run_scale)
    autoscale = subparsers.add_parser(
        "autoscale",
        help="let the mesh choose a detector's replicas from its lag (or show, or turn it off)",
    )
    autoscale.add_argument("name", help="the deployed detector")
    autoscale.add_argument("--min", type=int, help="fewest replicas (1 or more)")
    autoscale.add_argument("--max", type=int, help="most replicas (at most its partitions run)")
    autoscale.add_argument(
        "--lag-per-replica", type=int, help="records of lag per replica: desired = ceil(lag / this)"
    )
    autoscale.add_argument(
        "--scale-down-after", type=float, metavar="SECONDS",
        help=f"how long the lag must ask for fewer before a replica stops "
        f"({DEFAULT_SCALE_DOWN_AFTER_S:g})",
    )  # fmt: skip
    autoscale.add_argument(
        "--off", action="store_true", help="stop autoscaling it (its replicas stay as they are)"
    )
    autoscale.set_defaults(handler=run_autoscale)


def run_deploy(args: argparse.Namespace, settings: Settings) -> int:
    deploy(settings, args.folder, backend=args.backend)
    return 0


def run_rollout(args: argparse.Namespace, settings: Settings) -> int:
    if args.health_seconds < 0:
        raise ConfigError("--health-seconds must be 0 or more")
    if not 0 < args.max_error_rate <= 1:
        raise ConfigError("--max-error-rate must be a fraction in (0, 1]")
    if args.shadow:
        if args.folder is None:
            raise ConfigError("--shadow needs the new version's FOLDER: mesh rollout NAME FOLDER "
                              "--shadow")  # fmt: skip
        start_shadow(settings, args.name, args.folder)
        return 0
    report = rollout(settings, args.name, args.folder, args.health_seconds, args.max_error_rate)
    deployment = report.deployment
    print(
        f"rolled out {deployment.name} v{deployment.current.version} "
        f"({report.replaced} replica(s)); {report.duplicates}"
    )
    return 0


def run_scale(args: argparse.Namespace, settings: Settings) -> int:
    deployment = Registry(settings.home).get(args.name)
    policy = effective_policy(deployment) if deployment else None
    if policy is not None:
        raise DeployRefused(
            f"{args.name} is autoscaled (min {policy.min}, max {policy.max}): "
            f"`mesh autoscale {args.name} --min N --max N` bounds it, `--off` hands it back"
        )
    scale(settings, args.name, args.replicas)
    return 0


def run_shadow(args: argparse.Namespace, settings: Settings) -> int:
    if args.abandon:
        abandon_shadow(settings, args.name)
        return 0
    if args.promote:
        promoted = promote_shadow(settings, args.name)
        print(f"promoted {args.name} v{promoted.deployment.current.version} "
              f"({promoted.replaced} replica(s)); {promoted.duplicates}")  # fmt: skip
        return 0
    deployment = Registry(settings.home).get(args.name)
    if deployment is None or not deployment.shadow:
        raise DeployRefused(
            f"{args.name} has no shadow: `mesh rollout {args.name} FOLDER --shadow` starts one"
        )
    report = compare(settings, deployment)
    print(json.dumps(report, indent=2) if args.json else "\n".join(comparison_text(report)))
    return 0


def run_autoscale(args: argparse.Namespace, settings: Settings) -> int:
    options = {"min": args.min, "max": args.max, "lag_per_replica": args.lag_per_replica,
               "scale_down_after_s": args.scale_down_after}  # fmt: skip
    given = {key: value for key, value in options.items() if value is not None}
    if args.off and given:
        raise ConfigError("--off takes no other option: it turns autoscaling off")
    for key, value in given.items():
        floor = 0 if key == "scale_down_after_s" else 1
        if value < floor:
            flag = "--scale-down-after" if floor == 0 else f"--{key.replace('_', '-')}"
            raise ConfigError(f"{flag} must be {floor} or more, not {value:g}")
    if not args.off and not given:
        deployment = Registry(settings.home).get(args.name)
        if deployment is None:
            raise DeployRefused(f"no detector {args.name!r} is deployed")
        print(f"{args.name}: autoscale {policy_text(effective_policy(deployment))}")
        return 0
    deployment, policy = set_autoscale(settings, args.name, None if args.off else given)
    if policy is None:
        print(f"autoscale off for {args.name}: it keeps its {deployment.replicas} replica(s) "
              "(`mesh scale` changes them)")  # fmt: skip
        return 0
    print(
        f"autoscale {args.name}: min {policy.min}, max {policy.max}, "
        f"{policy.lag_per_replica} records of lag per replica, down after "
        f"{policy.scale_down_after_s:g} s; the autoscaler applies it within "
        f"{settings.autoscale_interval_s:g} s (`mesh status` shows its decisions)"
    )
    if autoscaler_process(settings).running() is None:
        print("note: no autoscaler runs for this mesh yet: `mesh up` starts it (or run "
              "`python -m control.autoscale` beside a mesh `mesh up` did not start)")  # fmt: skip
    return 0
