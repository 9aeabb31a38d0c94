"""Deploy, stop, and bring up or down every detector of the local mesh.

Each operation touches the processes of one detector only; the others keep consuming without a
rebalance, because every detector has its own consumer group and its own processes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from control.deploy.backends import (
    DOCKER,
    PROCESS,
    Replica,
    Started,
    preflight,
    replicas,
    running_replicas,
    shadow_replicas,
)
from control.deploy.errors import DeployRefused, UnhealthyRelease
from control.deploy.health import DEFAULT_MAX_ERROR_RATE, wait_started
from control.deploy.registry import RUNNING, STOPPED, Deployment, Registry
from control.deploy.releases import folder_digest
from control.deploy.shadow_removal import remove_shadow
from control.deploy.validate import Validated, validate
from hosting.containers.engine import EngineUnavailable
from shared.detector import load_manifest
from shared.detector.autoscale import too_few_partitions
from shared.endpoints import resolve_bootstrap
from shared.errors import MeshError
from shared.kafka.inspect import topic_views
from shared.kafka.security import client_security
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames

#: The reference detectors that `mesh up` deploys the first time it runs.
DETECTORS_DIR = PROJECT_ROOT / "detectors"

Say = Callable[[str], None]


def deploy(
    settings: Settings, folder: Path, say: Say = print, backend: str = PROCESS
) -> Deployment:
    """Validate ``folder``, release it and start its replicas on ``backend``; refuse before
    touching anything."""
    preflight(settings, backend)  # no engine or no image: refused before anything is written
    folder = folder.resolve()
    validated = validate(folder)
    say(
        f"checked {validated.name} v{validated.version}: manifest, import, inputs "
        f"({', '.join(validated.inputs)}), dry run of {validated.dry_run_records} records "
        f"-> {validated.dry_run_alerts} alerts"
    )
    check_inputs_exist(settings, validated)  # no mesh: say so before anything is written
    registry = Registry(settings.home)
    with registry.changing(validated.name):
        existing = registry.get(validated.name)
        _check_name_free(settings, validated, folder, existing, backend)
        release = registry.new_release(validated.name, folder, validated.version)
        deployment = Deployment(
            name=validated.name,
            source=str(folder),
            desired=RUNNING,
            replicas=validated.replicas,
            current=release,
            previous=existing.current if existing else None,
            history=existing.history if existing else (),
            backend=backend,
        ).with_event(f"deployed v{validated.version} from {folder} ({backend})")
        instances = replicas(settings, backend, deployment.name, release.seq, deployment.replicas)
        registry.save(deployment)
        reason: str | None
        try:
            for instance in instances:
                info, _ = instance.start(release)
                say(f"started {instance.name} pid {info.pid}")
        except MeshError as error:  # the engine refused a container: undo, and say why
            reason = str(error)
        else:
            reason = wait_started(instances, DEFAULT_MAX_ERROR_RATE)
        if reason:
            for instance in instances:
                instance.stop()
            registry.save(deployment.with_event(f"failed to start: {reason}", desired=STOPPED))
            raise UnhealthyRelease(
                f"{deployment.name} v{validated.version} did not start: {reason}; it was stopped"
            )
        say(
            f"deployed {deployment.name} v{validated.version}: {deployment.replicas} replica(s) "
            f"running in group {TopicNames.of(settings).detector_group(deployment.name)}, "
            f"reading from {validated.start} where the group has no offsets"
        )
        return deployment


def check_inputs_exist(settings: Settings, validated: Validated) -> None:
    """Refuse in one line when the cluster does not answer or an input topic is missing (the
    runtime would otherwise wait for it, then die with a client error)."""

    wanted = [TopicNames.of(settings).records(t) for t in validated.inputs]
    views = topic_views(
        resolve_bootstrap(settings), wanted, timeout=5, login=client_security(settings)
    )
    found = {view.name: view.partitions for view in views}
    missing = [topic for topic in wanted if topic not in found]
    if missing:
        raise DeployRefused(
            f"input topic {missing[0]} does not exist: start the mesh with `mesh up` "
            "(or create the topics with `mesh topics apply`)"
        )
    refused = validated.autoscaled and too_few_partitions(validated.name, min(found.values()))
    if refused:
        raise DeployRefused(f"{refused} (remove the manifest's autoscale block)")


def _check_name_free(
    settings: Settings,
    validated: Validated,
    folder: Path,
    existing: Deployment | None,
    backend: str,
) -> None:
    name = validated.name
    if existing is not None and existing.desired == RUNNING:
        if Path(existing.source) != folder:
            raise DeployRefused(
                f"the name {name!r} is taken by {existing.source} (v{existing.current.version}, "
                "running): rename your detector, or `mesh stop` the other one first"
            )
        raise DeployRefused(
            f"{name} v{existing.current.version} is already deployed from {folder}: "
            f"use `mesh rollout {name}` to ship a new version"
        )
    leftovers = running_replicas(settings, PROCESS, name)
    earlier = existing.backend if existing else backend
    if DOCKER in (backend, earlier):
        try:
            leftovers += running_replicas(settings, DOCKER, name)
        except EngineUnavailable:  # no engine, so none of its containers runs
            if backend == DOCKER:
                raise
    if leftovers:
        raise DeployRefused(
            f"{name} still has running instances ({leftovers[0].name}): `mesh stop {name}` first"
        )


def stop(settings: Settings, name: str) -> list[Started]:
    """Stop every replica of ``name`` and mark it stopped (``mesh up`` leaves it stopped); a
    shadow is stopped and removed with it (group and changelog: a stopped detector has nothing to
    be compared with)."""
    registry = Registry(settings.home)
    with registry.changing(name):
        deployment = registry.get(name)
        backend = deployment.backend if deployment else PROCESS
        stopped = [info for i in running_replicas(settings, backend, name) if (info := i.stop())]
        if deployment is not None and deployment.shadow:
            stopped += remove_shadow(settings, deployment)
            deployment = deployment.with_event("shadow stopped with the detector", shadow=None)
            registry.save(deployment)
        if deployment is not None and deployment.desired != STOPPED:
            registry.save(deployment.with_event("stopped", desired=STOPPED))
        return stopped


def known_names(settings: Settings) -> list[str]:
    """Every deployed detector, plus the reference ones `mesh up` would deploy."""
    deployed = {d.name for d in Registry(settings.home).all()}
    return sorted(deployed | {path.parent.name for path in _reference_manifests()})


def up(settings: Settings, say: Say = print) -> None:
    """Deploy the reference detectors the first time; start every deployment that should run."""
    registry = Registry(settings.home)
    for path in _reference_manifests():
        manifest = load_manifest(path.parent)
        with registry.changing(manifest.name):
            if registry.get(manifest.name) is None:
                release = registry.new_release(manifest.name, path.parent, manifest.version)
                registry.save(
                    Deployment(
                        manifest.name, str(path.parent), RUNNING, manifest.replicas, release
                    ).with_event(f"deployed v{manifest.version} by `mesh up`")
                )
    for deployment in registry.all():
        if deployment.desired != RUNNING:
            say(f"detector {deployment.name}: stopped (`mesh deploy {deployment.source}` to run)")
            continue
        try:
            instances = current_instances(settings, deployment)
            results = [instance.start(deployment.current) for instance in instances]
        except MeshError as error:  # no engine or image for a container deployment: the rest run
            say(f"detector {deployment.name}: not started: {error}")
            continue
        shadow_release = deployment.shadow_release
        if shadow_release is not None:
            for shadow in shadow_replicas(settings, deployment):
                info, _ = shadow.start(shadow_release)
                say(f"detector {deployment.name} shadow v{shadow_release.version}: pid {info.pid}")
        fresh = sum(started for _, started in results)
        pids = ", ".join(str(info.pid) for info, _ in results)
        say(
            f"detector {deployment.name} v{deployment.current.version}: {fresh} started, "
            f"pids {pids}"
        )
        if _source_changed(deployment):
            say(
                f"  note: {deployment.source} changed since v{deployment.current.version} was "
                f"released; `mesh rollout {deployment.name}` ships it"
            )


def down(settings: Settings, say: Say = print) -> None:
    """Stop every detector's processes; what should run stays recorded for the next `mesh up`."""
    for deployment in Registry(settings.home).all():
        try:  # a shadow's replicas too: `mesh up` starts it again
            running = [*running_replicas(settings, deployment.backend, deployment.name),
                       *shadow_replicas(settings, deployment)]  # fmt: skip
        except MeshError as error:
            say(f"detector {deployment.name}: {error}")
            continue
        for instance in running:
            info = instance.stop()
            if info is not None:
                say(f"stopped {instance.name} pid {info.pid}")


def current_instances(settings: Settings, deployment: Deployment) -> list[Replica]:
    return replicas(
        settings, deployment.backend, deployment.name, deployment.current.seq, deployment.replicas
    )


def _reference_manifests() -> list[Path]:
    return sorted(DETECTORS_DIR.glob("*/manifest.yaml"))


def _source_changed(deployment: Deployment) -> bool:
    source = Path(deployment.source)
    return source.is_dir() and folder_digest(source) != deployment.current.digest
