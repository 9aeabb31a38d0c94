"""The autoscaler's look at the mesh: each autoscaled detector's lag, the decision, the step.

Every ``MESH_AUTOSCALE_INTERVAL_S`` the autoscaler reads the deployments, asks the broker for each
autoscaled detector's consumer-group lag on its inputs (committed offsets against the ends, as
`mesh status` shows it), lets the detector's :class:`Recommender` decide, and runs the decided
count through :func:`control.deploy.scale.scale`: the same graceful step as `mesh scale` (new
replicas must report healthy; a stopped one commits and leaves the group), so only that
detector's own group rebalances. Each decision that changes the count is a log line; every
look's figures go to the status file `mesh status` prints and to metrics that reach InfluxDB
(``autoscale.lag``, ``autoscale.replicas``, ``autoscale.desired``; ``autoscale.steps`` counts
steps by direction).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from control.autoscale.policy import Decision, Recommender
from control.deploy.autoscale_choice import effective_policy
from control.deploy.errors import DeployRefused, UnhealthyRelease
from control.deploy.registry import RUNNING, Deployment, Registry
from control.deploy.scale import input_partitions, scale
from shared.detector import load_manifest
from shared.endpoints import resolve_bootstrap
from shared.errors import MeshError
from shared.json_files import write_json_atomic
from shared.kafka.inspect import group_lag
from shared.kafka.security import client_security
from shared.metrics import MetricRegistry
from shared.settings import Settings
from shared.topic_names import TopicNames

log = logging.getLogger("autoscaler")
#: The autoscaler's local process and folder under MESH_HOME.
AUTOSCALER = "autoscaler"
#: Seconds a detector's partition count is reused before the broker is asked again.
PARTITIONS_TTL_S = 60.0


def autoscaler_status_file(home: Path) -> Path:
    """Where the running autoscaler keeps each detector's last look (`mesh status` reads it)."""
    return home / AUTOSCALER / "status.json"


@dataclass
class _Watched:
    recommender: Recommender
    partitions: int = 0
    partitions_at: float = float("-inf")
    lag: int = 0
    decision: Decision | None = None


class Autoscaler:
    """Decisions for every autoscaled detector of one mesh; one :meth:`look` per interval."""

    def __init__(
        self,
        settings: Settings,
        metrics: MetricRegistry,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self.names = TopicNames.of(settings)
        self.registry = Registry(settings.home)
        self.watched: dict[str, _Watched] = {}
        self.errors: dict[str, str] = {}

    def look(self) -> dict[str, Any]:
        """Decide (and step) for each autoscaled detector; returns what the status file holds."""
        seen: dict[str, Any] = {}
        for deployment in self.registry.all():
            if deployment.desired != RUNNING:
                continue
            try:
                seen[deployment.name] = self._look_at(deployment)
            except MeshError as error:  # a broker hiccup or a refused step: say it, go on
                seen[deployment.name] = {"autoscale": True, "error": str(error)}
                log.warning("autoscale %s: %s", deployment.name, error)
        for gone in set(self.watched) - {n for n, v in seen.items() if v.get("autoscale")}:
            del self.watched[gone]
            for metric in ("autoscale.lag", "autoscale.replicas", "autoscale.desired"):
                self.metrics.remove(metric, {"detector": gone})
        status = {"updated": time.time(), "detectors": seen}
        write_json_atomic(autoscaler_status_file(self.settings.home), status)
        return status

    def _look_at(self, deployment: Deployment) -> dict[str, Any]:
        name = deployment.name
        manifest = load_manifest(Path(deployment.current.path))  # read once per look
        policy = effective_policy(deployment, manifest)
        if policy is None:
            return {"autoscale": False, "replicas": deployment.replicas}
        watched = self.watched.get(name)
        if watched is None:
            watched = self.watched[name] = _Watched(Recommender(policy))
            self._register_gauges(name, watched)
        watched.recommender.policy = policy
        now = self.clock()
        if now - watched.partitions_at > PARTITIONS_TTL_S:
            watched.partitions = input_partitions(self.settings, deployment)
            watched.partitions_at = now
        watched.lag = self._lag(deployment.name, manifest.inputs)
        decision = watched.recommender.decide(
            now, watched.lag, watched.partitions, deployment.replicas
        )
        watched.decision = decision
        replicas = deployment.replicas
        if decision.replicas != replicas:
            self._step(name, replicas, decision)
            replicas = decision.replicas
        return {
            "autoscale": True,
            "policy": asdict(policy),
            "partitions": watched.partitions,
            "lag": watched.lag,
            "desired": decision.desired,
            "replicas": replicas,
            "reason": decision.reason,
            "holding_s": decision.holding_s,
        }

    def _step(self, name: str, replicas: int, decision: Decision) -> None:
        """Run ``decision.replicas`` the way `mesh scale` does; a refusal is this look's error."""
        direction = "up" if decision.replicas > replicas else "down"
        log.info("autoscale %s: %s: %d -> %d replicas", name, decision.reason, replicas,
                 decision.replicas)  # fmt: skip
        try:
            scale(self.settings, name, decision.replicas, say=lambda line: log.info("%s", line))
        except (DeployRefused, UnhealthyRelease) as error:
            raise MeshError(f"step {replicas} -> {decision.replicas} refused: {error}") from None
        self.metrics.counter("autoscale.steps", {"detector": name, "direction": direction}).inc()

    def _lag(self, name: str, inputs: tuple[str, ...]) -> int:
        topics = [self.names.records(record_type) for record_type in inputs]
        lag = group_lag(
            resolve_bootstrap(self.settings),
            self.names.detector_group(name),
            topics,
            timeout=5.0,
            login=client_security(self.settings),
        )
        return lag.total

    def _register_gauges(self, name: str, watched: _Watched) -> None:
        tags = {"detector": name}
        self.metrics.gauge("autoscale.lag", lambda: watched.lag, tags)
        self.metrics.gauge(
            "autoscale.desired", lambda: watched.decision.desired if watched.decision else 0, tags
        )
        self.metrics.gauge(
            "autoscale.replicas",
            lambda: watched.decision.replicas if watched.decision else 0,
            tags,
        )
