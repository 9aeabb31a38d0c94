"""Applying topic declarations to a cluster, idempotently, through the admin API.

Missing topics are created; topic configs that differ from the declaration are set with
incremental alters (other configs are left alone); a partition count that differs is drift we do
not fix, because changing it moves keys between partitions and breaks co-partitioning. A
replication below the declaration is drift too, raised only when asked (``reassign``, `mesh
topics apply --raise-replication`): copying every partition of a topic is heavy on a loaded
cluster, an operator's decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from shared.errors import MeshError
from shared.kafka.reassignment import Plan, plan_raise
from shared.kafka.served import wait_until_served
from shared.kafka.topics import TopicSpec


class Action(Enum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    DRIFT = "drift"


@dataclass(frozen=True)
class TopicOutcome:
    """What applying one declaration did, as one human-readable line."""

    topic: str
    action: Action
    detail: str = ""
    changes: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        text = f"{self.action.value:<9} {self.topic}"
        return f"{text}: {self.detail}" if self.detail else text


class TopicApplyError(MeshError):
    """The cluster refused a topic operation."""


#: Carries out a reassignment plan and returns once it is done (:mod:`shared.kafka.reassignment`).
Reassign = Callable[[Plan], None]


def apply_topics(
    admin: object, specs: list[TopicSpec], timeout: float = 30.0, reassign: Reassign | None = None
) -> list[TopicOutcome]:
    """Create or update every declared topic; return one outcome per topic, in declared order.
    ``reassign``: raise a replication below the declaration instead of reporting it."""

    assert isinstance(admin, AdminClient)
    cluster = admin.list_topics(timeout=timeout)
    existing = cluster.topics
    # Replication follows the cluster's size (shared.kafka.replication): 3/2 on three brokers
    # or more, 1/1 on the embedded one.
    specs = [s.on_cluster(len(cluster.brokers)) for s in specs]
    outcomes: dict[str, TopicOutcome] = {}
    missing = [s for s in specs if s.name not in existing]
    outcomes.update(_create(admin, missing, timeout))
    present = [s for s in specs if s.name in existing]
    for spec in present:
        actual = len(existing[spec.name].partitions)
        if actual != spec.partitions:
            outcomes[spec.name] = TopicOutcome(
                spec.name,
                Action.DRIFT,
                f"has {actual} partitions, declared {spec.partitions}; partition counts are never "
                "changed automatically: recreate the topic or change infra/topics.yaml",
            )
    raised: dict[str, str] = {}
    plan: Plan = {}
    for spec in present:
        replicas = min((len(p.replicas) for p in existing[spec.name].partitions.values()),
                       default=spec.replication_factor)  # fmt: skip
        if spec.name in outcomes or replicas >= spec.replication_factor:
            continue
        if reassign is not None:  # every topic's partitions in one reassignment, copied together
            current = {(spec.name, p): tuple(m.replicas)
                       for p, m in existing[spec.name].partitions.items()}  # fmt: skip
            topic_plan = plan_raise(current, sorted(cluster.brokers), spec.replication_factor)
            plan |= topic_plan
            raised[spec.name] = (f"replication {replicas} -> {spec.replication_factor} "
                                 f"({len(topic_plan)} partitions reassigned)")  # fmt: skip
            continue
        outcomes[spec.name] = TopicOutcome(
            spec.name,
            Action.DRIFT,
            f"has replication {replicas}, declared {spec.replication_factor} on this cluster "
            f"of {len(cluster.brokers)} brokers: one broker lost can take its partitions "
            "offline; raise it with `mesh topics apply --raise-replication` (a partition "
            "reassignment)",
        )
    if plan and reassign is not None:
        reassign(plan)
    aligned = _align_configs(admin, [s for s in present if s.name not in outcomes], timeout)
    for name, detail in raised.items():  # min.insync.replicas only now that the replicas are
        also = aligned[name].detail
        aligned[name] = TopicOutcome(name, Action.UPDATED, detail + (f"; {also}" if also else ""),
                                     aligned[name].changes)  # fmt: skip
    outcomes.update(aligned)
    return [outcomes[s.name] for s in specs]


def _create(admin: object, specs: list[TopicSpec], timeout: float) -> dict[str, TopicOutcome]:
    if not specs:
        return {}
    futures = admin.create_topics(  # type: ignore[attr-defined]
        [NewTopic(s.name, s.partitions, s.replication_factor, config=s.config) for s in specs],
        request_timeout=timeout,
    )
    outcomes = {}
    for spec in specs:
        try:
            futures[spec.name].result()
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:  # a concurrent apply won the race
                raise TopicApplyError(f"cannot create topic {spec.name}: {error.str()}") from None
        outcomes[spec.name] = TopicOutcome(
            spec.name, Action.CREATED, f"{spec.partitions} partitions"
        )
    _wait_visible(admin, specs, timeout)
    return outcomes


def _wait_visible(admin: object, specs: list[TopicSpec], timeout: float) -> None:
    """Return once every partition of every new topic is served by its leader.

    The controller acknowledges a creation before brokers serve it; without this wait a produce
    or config change right after ``apply`` can fail with "unknown topic or partition", or an
    idempotent producer can lose its first records (:mod:`shared.kafka.served`).
    """
    unserved = wait_until_served(admin, [s.name for s in specs], timeout)
    if unserved:
        raise TopicApplyError(
            f"topics were created but these partitions are not served yet: {', '.join(unserved)}"
        )


def _align_configs(
    admin: object, specs: list[TopicSpec], timeout: float
) -> dict[str, TopicOutcome]:
    if not specs:
        return {}
    resources = [ConfigResource(ResourceType.TOPIC, s.name) for s in specs]
    described = admin.describe_configs(resources, request_timeout=timeout)  # type: ignore[attr-defined]
    changes: dict[str, dict[str, str]] = {}
    for spec, resource in zip(specs, resources, strict=True):
        try:
            current = {k: v.value for k, v in described[resource].result().items()}
        except KafkaException as exc:
            raise TopicApplyError(
                f"cannot read configs of {spec.name}: {exc.args[0].str()}"
            ) from None
        changes[spec.name] = {k: v for k, v in spec.config.items() if current.get(k) != v}
    to_alter = []
    for spec in specs:
        if changes[spec.name]:
            entries = [
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                for k, v in changes[spec.name].items()
            ]
            to_alter.append(
                ConfigResource(ResourceType.TOPIC, spec.name, incremental_configs=entries)
            )
    if to_alter:
        futures = admin.incremental_alter_configs(to_alter, request_timeout=timeout)  # type: ignore[attr-defined]
        for resource, future in futures.items():
            try:
                future.result()
            except KafkaException as exc:
                raise TopicApplyError(
                    f"cannot update configs of {resource.name}: {exc.args[0].str()}"
                ) from None
    outcomes = {}
    for spec in specs:
        diff = changes[spec.name]
        if diff:
            detail = ", ".join(f"{k}={v}" for k, v in sorted(diff.items()))
            outcomes[spec.name] = TopicOutcome(spec.name, Action.UPDATED, f"set {detail}", diff)
        else:
            outcomes[spec.name] = TopicOutcome(spec.name, Action.UNCHANGED)
    return outcomes
