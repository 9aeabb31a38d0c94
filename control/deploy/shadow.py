"""``mesh rollout NAME FOLDER --shadow`` and ``mesh shadow NAME --promote|--abandon``: a new
version run beside the live one on the same live records, before it alerts anyone.

The shadow is validated as any rollout is, released (its own snapshot, so an edit of FOLDER
does not leak into it), and started with as many replicas as the live version in its own
consumer group (``<group>.shadow``), whose offsets are first set to the live group's committed
ones: both versions judge the same records from the same point on. It writes its alerts to
``alerts.shadow`` (the notifier reads only ``alerts``) and its state, if any, to its own changelog;
the live group, its offsets and every other detector are never touched. A stateful shadow starts
with empty state, so its first windows may differ from the live version's (the comparison says
since when it ran). ``mesh shadow NAME`` compares them (:mod:`.shadow_report`).

``--promote`` stops the shadow and rolls its release out as the live version: the ordinary
rollout, in the live group, which keeps its offsets. ``--abandon`` stops it and deletes its group
and changelog. Both refuse in one line when there is no shadow; a second shadow while one runs is
refused too. `mesh down` stops a shadow and `mesh up` starts it again, like a replica.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from control.deploy.backends import shadow_replicas
from control.deploy.errors import DeployRefused, UnhealthyRelease
from control.deploy.health import DEFAULT_MAX_ERROR_RATE, wait_started
from control.deploy.lifecycle import Say
from control.deploy.registry import Deployment, Registry
from control.deploy.releases import Release, folder_digest
from control.deploy.rollout import RolloutReport, new_version, rollout
from control.deploy.shadow_removal import remove_shadow
from shared.endpoints import resolve_bootstrap
from shared.kafka.groups import set_group_offsets
from shared.kafka.inspect import group_lag
from shared.kafka.security import client_security
from shared.settings import Settings
from shared.topic_names import TopicNames


def start_shadow(settings: Settings, name: str, source: Path, say: Say = print) -> Deployment:
    """Validate ``source`` and run it as ``name``'s shadow; refuse in one line, touching nothing
    that runs, when that cannot be."""
    registry = Registry(settings.home)
    current = registry.running(name)
    if current.shadow:
        raise DeployRefused(
            f"a shadow of {name} (v{current.shadow['release']['version']}) already runs: "
            f"`mesh shadow {name} --promote` or `--abandon` it first"
        )
    folder = source.resolve()
    validated = new_version(settings, current, folder, "compare", say)
    names, login = TopicNames.of(settings), client_security(settings)
    bootstrap = resolve_bootstrap(settings)
    with registry.changing(name):
        release = registry.new_release(name, folder, validated.version)
        # Leftovers of an earlier shadow (a crash between two steps) must not seed this one.
        remove_shadow(settings, current)
        topics = [names.records(t) for t in validated.inputs]
        live = group_lag(bootstrap, names.detector_group(name), topics, timeout=10, login=login)
        start = {key: offset for key, offset in live.committed.items() if offset is not None}
        set_group_offsets(bootstrap, names.shadow_group(name), start, login)
        shadowed = current.with_event(
            f"shadow v{validated.version} started from {folder}",
            shadow={
                "release": asdict(release),
                "source": str(folder),
                "replicas": current.replicas,
                "started": time.time(),
                "start_offsets": [[t, p, o] for (t, p), o in sorted(start.items())],
            },
        )
        instances = shadow_replicas(settings, shadowed)
        registry.save(shadowed)
        for instance in instances:
            info, _ = instance.start(release)
            say(f"started {instance.name} v{release.version} pid {info.pid}")
        reason = wait_started(list(instances), DEFAULT_MAX_ERROR_RATE)
        if reason:
            remove_shadow(settings, shadowed)
            registry.save(current.with_event(f"shadow v{release.version} failed: {reason}"))
            raise UnhealthyRelease(
                f"the shadow v{release.version} of {name} did not start ({reason}); it was "
                "stopped and removed"
            )
        say(
            f"shadow {name} v{release.version}: {len(instances)} replica(s) in group "
            f"{names.shadow_group(name)}, from the live group's offsets, alerts to "
            f"{names.alerts_shadow} (never notified); `mesh shadow {name}` compares"
        )
        return shadowed


def abandon_shadow(settings: Settings, name: str, say: Say = print) -> Deployment:
    """Stop the shadow and delete its group and changelog; the live version is untouched."""
    registry = Registry(settings.home)
    with registry.changing(name):
        current = _with_shadow(registry, name)
        version = _release(current).version
        remove_shadow(settings, current)
        abandoned = current.with_event(f"shadow v{version} abandoned", shadow=None)
        registry.save(abandoned)
    say(f"abandoned the shadow v{version} of {name}: stopped, its group and changelog deleted")
    return abandoned


def promote_shadow(
    settings: Settings, name: str, say: Say = print, **rollout_options: Any
) -> RolloutReport:
    """Stop the shadow, then roll its release out as the live version (in the live group)."""
    registry = Registry(settings.home)
    current = _with_shadow(registry, name)
    release = _release(current)
    source = Path(current.shadow["source"]) if current.shadow else Path()
    if not source.is_dir() or folder_digest(source) != release.digest:
        raise DeployRefused(
            f"{source} changed since the shadow v{release.version} started: what would go live "
            f"is not what was compared; `mesh shadow {name} --abandon`, then shadow it again"
        )
    abandon_shadow(settings, name, say=lambda line: None)
    say(f"stopped the shadow v{release.version} of {name}; rolling it out in the live group")
    return rollout(settings, name, source, say=say, **rollout_options)


def _release(deployment: Deployment) -> Release:
    release = deployment.shadow_release
    assert release is not None, "checked by _with_shadow"
    return release


def _with_shadow(registry: Registry, name: str) -> Deployment:
    deployment = registry.running(name)
    if not deployment.shadow:
        raise DeployRefused(
            f"{name} has no shadow: `mesh rollout {name} FOLDER --shadow` starts one"
        )
    return deployment
