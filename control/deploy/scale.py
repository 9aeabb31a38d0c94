"""``mesh scale NAME N``: run N replicas of a deployed detector.

Replicas share the detector's own consumer group, so scaling moves partitions inside that group
only (a cooperative rebalance no other detector notices). More replicas: the new ones start
under their supervisors and must report running, healthy, before the command returns; if one
does not, the new ones are stopped and the old count keeps running. Fewer: the highest-numbered
replicas get SIGTERM, commit their batch and leave the group, and their partitions (and the
state of those partitions, restored from the changelog) move to the others. The count is
recorded, so `mesh up` keeps it, and so does `mesh rollout` (an operator's count wins over the new
manifest's ``replicas``). More replicas than input partitions would sit idle: refused.
"""

from __future__ import annotations

from pathlib import Path

from control.deploy.backends import preflight, replicas
from control.deploy.errors import DeployRefused, UnhealthyRelease
from control.deploy.health import DEFAULT_MAX_ERROR_RATE, wait_started
from control.deploy.lifecycle import Say
from control.deploy.registry import Deployment, Registry
from shared.detector import load_manifest
from shared.endpoints import resolve_bootstrap
from shared.kafka.inspect import topic_views
from shared.kafka.security import client_security
from shared.settings import Settings
from shared.topic_names import TopicNames


def scale(settings: Settings, name: str, count: int, say: Say = print) -> Deployment:
    """Run ``count`` replicas of detector ``name``; refuse in one line, touching nothing, if it
    is not deployed and running or ``count`` is out of range."""
    if count < 1:
        raise DeployRefused(f"cannot scale {name} to {count} replicas: `mesh stop {name}` stops it")
    registry = Registry(settings.home)
    with registry.changing(name):
        deployment = registry.running(name)
        partitions = input_partitions(settings, deployment)
        if count > partitions:
            raise DeployRefused(
                f"{name} reads {partitions} partitions per input: more than {partitions} "
                "replicas would sit idle"
            )
        before = deployment.replicas
        if count == before:
            say(f"{name} already runs {count} replica(s)")
            return deployment
        preflight(settings, deployment.backend)
        instances = replicas(
            settings, deployment.backend, name, deployment.current.seq, max(count, before)
        )
        if count > before:
            added = instances[before:]
            for instance in added:
                info, _ = instance.start(deployment.current)
                say(f"started {instance.name} pid {info.pid}")
            reason = wait_started(added, DEFAULT_MAX_ERROR_RATE)
            if reason:
                for instance in added:
                    instance.stop()
                raise UnhealthyRelease(
                    f"{name}: the new replicas did not start ({reason}); they were stopped and "
                    f"{before} replica(s) run as before"
                )
        else:
            for instance in reversed(instances[count:]):
                stopped = instance.stop()
                if stopped is not None:
                    say(f"stopped {instance.name} pid {stopped.pid}")
        scaled = deployment.with_event(
            f"scaled from {before} to {count} replicas", replicas=count, scaled=True
        )
        registry.save(scaled)
        say(
            f"scaled {name} from {before} to {count} replica(s) in group "
            f"{TopicNames.of(settings).detector_group(name)}"
        )
        return scaled


def input_partitions(settings: Settings, deployment: Deployment) -> int:
    """The partition count of the detector's inputs (co-partitioned: the smallest, to be safe)."""

    manifest = load_manifest(Path(deployment.current.path))
    wanted = [TopicNames.of(settings).records(t) for t in manifest.inputs]
    views = topic_views(
        resolve_bootstrap(settings), wanted, timeout=5, login=client_security(settings)
    )
    if len(views) < len(wanted):
        raise DeployRefused(
            f"the input topics of {deployment.name} are missing: start the mesh with `mesh up`"
        )
    return min(view.partitions for view in views)
