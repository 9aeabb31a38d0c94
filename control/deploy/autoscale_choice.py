"""Which autoscale policy a deployed detector follows, and `mesh autoscale` changing it.

The manifest's ``autoscale:`` block is the default; `mesh autoscale NAME --min/--max/
--lag-per-replica` replaces it for this deployment (kept across `mesh down`/`mesh up` and
rollouts, as `mesh scale`'s count is), and `mesh autoscale NAME --off` turns it off whatever the
manifest says. While a detector is autoscaled, `mesh scale` refuses: the autoscaler would undo
the count at its next look.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from pathlib import Path

from control.deploy.errors import DeployRefused
from control.deploy.registry import Deployment, Registry
from control.deploy.scale import input_partitions
from shared.detector import load_manifest
from shared.detector.autoscale import AutoscalePolicy, too_few_partitions
from shared.detector.manifest import Manifest
from shared.settings import Settings

OFF = {"off": True}


def effective_policy(
    deployment: Deployment, manifest: Manifest | None = None
) -> AutoscalePolicy | None:
    """The policy the autoscaler applies to ``deployment`` (None: it is not autoscaled);
    ``manifest`` is its current release's, when the caller has read it already."""
    if deployment.autoscale is not None:
        return None if deployment.autoscale.get("off") else AutoscalePolicy(**deployment.autoscale)
    return (manifest or load_manifest(Path(deployment.current.path))).autoscale


def set_autoscale(
    settings: Settings, name: str, changes: dict[str, float | int] | None
) -> tuple[Deployment, AutoscalePolicy | None]:
    """Apply ``changes`` (policy fields; None: turn autoscale off) to the deployment's policy and
    save it; refuse in one line, saving nothing, when the result is not a valid policy."""
    registry = Registry(settings.home)
    with registry.changing(name):
        deployment = registry.running(name)
        if changes is None:
            saved = deployment.with_event("autoscale off", autoscale=OFF)
            registry.save(saved)
            return saved, None
        base = effective_policy(deployment)
        if base is None:
            missing = [f"--{f.replace('_', '-')}" for f in ("min", "max", "lag_per_replica")
                       if f not in changes]  # fmt: skip
            if missing:
                raise DeployRefused(f"{name} is not autoscaled yet: give {', '.join(missing)} too")
            policy = AutoscalePolicy(**changes)  # type: ignore[arg-type]
        else:
            policy = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
        problem = policy.problem()
        if problem:
            raise DeployRefused(f"cannot autoscale {name}: {problem}")
        refused = too_few_partitions(name, input_partitions(settings, deployment))
        if refused:
            raise DeployRefused(refused)
        saved = deployment.with_event(
            f"autoscale min {policy.min} max {policy.max} lag_per_replica "
            f"{policy.lag_per_replica} scale_down_after_s {policy.scale_down_after_s:g}",
            autoscale=asdict(policy),
        )
        registry.save(saved)
        return saved, policy
