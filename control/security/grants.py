"""What each service may do on Kafka, derived from the topic names the mesh declares.

A principal gets READ on its inputs, WRITE on its outputs (alerts, dead letters, metrics), READ
on its own consumer group, and READ/WRITE/CREATE on its own changelog (the runtime creates it at
first start). Nothing else: a detector may not read another's input, write notifications, or
join another detector's group. Prefixes only where a family of names belongs to one service
(ingest reads every ``raw.*`` and writes every ``records.*``; Spark names its consumer groups
with a random suffix). READ and WRITE imply DESCRIBE, which is all the metadata a client
asks for. Pure data: no broker needed to compute or test it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shared.topic_names import TopicNames

TOPIC, GROUP = "topic", "group"
READ, WRITE, CREATE = "read", "write", "create"


@dataclass(frozen=True, order=True)
class Grant:
    """One ACL: ``operation`` allowed on the topic or group ``name`` (or every name starting
    with it, when ``prefixed``)."""

    resource: str
    name: str
    operation: str
    prefixed: bool = False


def detector_principal(names: TopicNames, detector: str) -> str:
    return f"{names.prefix}detector-{detector}"


def notifier_principal(names: TopicNames) -> str:
    return f"{names.prefix}notifier"


def ingest_principal(names: TopicNames) -> str:
    return f"{names.prefix}ingest"


def aggregator_principal(names: TopicNames) -> str:
    return f"{names.prefix}metrics-aggregator"


def history_principal(names: TopicNames) -> str:
    return f"{names.prefix}history"


def ingest_grants(names: TopicNames) -> list[Grant]:
    """Ingest reads every raw topic (it subscribes by pattern, so by prefix) and owns the
    records family (``records.<type>`` and ``records.invalid``, by prefix: a new record type
    needs no new grant); it writes the window counts and its metrics. Its Spark sources' groups
    start with its group prefix (Spark adds a random part)."""
    return sorted({
        Grant(TOPIC, f"{names.prefix}raw.", READ, prefixed=True),
        Grant(TOPIC, f"{names.prefix}records.", WRITE, prefixed=True),
        *_writes(names.windows, names.metrics),
        Grant(GROUP, names.ingest_group_prefix, READ, prefixed=True),
    })  # fmt: skip


def aggregator_grants(names: TopicNames) -> list[Grant]:
    """The metrics aggregator reads the metric snapshots and the window counts and writes the
    snapshots it cannot decode to ``metrics.dlq`` (and its own metrics)."""
    return sorted({
        Grant(TOPIC, names.metrics, READ), Grant(TOPIC, names.windows, READ),
        *_writes(names.metrics_dlq, names.metrics),
        Grant(GROUP, names.aggregator_group_prefix, READ, prefixed=True),
    })  # fmt: skip


def history_grants(names: TopicNames) -> list[Grant]:
    """The history job only reads: every ``records.*`` topic (by prefix: a new record type needs
    no new grant) and the alerts."""
    return sorted({
        Grant(TOPIC, f"{names.prefix}records.", READ, prefixed=True),
        Grant(TOPIC, names.alerts, READ),
        Grant(GROUP, names.history_group_prefix, READ, prefixed=True),
    })  # fmt: skip


def detector_grants(names: TopicNames, detector: str, inputs: Iterable[str]) -> list[Grant]:
    """A detector reading ``records.<type>`` for each of ``inputs`` (its record types); its
    shadow versions (`mesh rollout --shadow`) run as the same principal, in their own group and
    state, writing to the shadow alerts."""
    changelogs = (names.changelog(detector), names.shadow_changelog(detector))
    return sorted({
        *(Grant(TOPIC, names.records(record_type), READ) for record_type in inputs),
        *_writes(names.alerts, names.alerts_shadow, names.detectors_dlq, names.metrics),
        *(Grant(TOPIC, c, op) for c in changelogs for op in (READ, WRITE, CREATE)),
        Grant(GROUP, names.detector_group(detector), READ),
        Grant(GROUP, names.shadow_group(detector), READ),
    })  # fmt: skip


def notifier_grants(names: TopicNames) -> list[Grant]:
    changelog = names.notifier_changelog
    return sorted({
        Grant(TOPIC, names.alerts, READ),
        *_writes(names.notifications, names.notifications_dlq, names.metrics),
        Grant(TOPIC, changelog, READ), Grant(TOPIC, changelog, WRITE),
        Grant(TOPIC, changelog, CREATE),
        Grant(GROUP, names.notifier_group, READ),
    })  # fmt: skip


def _writes(*topics: str) -> list[Grant]:
    return [Grant(TOPIC, topic, WRITE) for topic in topics]
