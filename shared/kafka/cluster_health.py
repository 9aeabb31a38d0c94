"""How whole a Kafka cluster is: which nodes answer, and which partitions a lost one left short.

What an operator must see first when a broker is lost (issue 48): which node is gone, what it
held, and what that means for the records:

* **offline**: a partition without a leader. Nothing is written to it or read from it until a
  replica comes back (with replication 1, only the lost node itself); the services stall on it
  alone and serve the others.
* **below min.insync.replicas**: a partition with a leader but fewer in-sync replicas than its
  topic's ``min.insync.replicas``. An acks=all producer (every producer of the mesh) is refused
  there: the records wait in the producer and are sent when a replica returns.
* **under-replicated**: fewer replicas in sync than assigned (the ISR shrank). Still served;
  one more loss away from one of the above.

A node is known to exist when it is in the metadata or a partition names it as a replica (how a
lost node is seen on a cluster the mesh did not start); it answers when it is in the metadata and
takes a connection (a killed node stays in the metadata until the controller fences it). Everything
comes from one metadata request and, only when some ISR shrank, one config request for those
topics' ``min.insync.replicas``: no per-partition call, so it answers at once even when a node is
gone.
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource

from shared.endpoints import broker_addresses

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class PartitionState:
    """One partition as the metadata shows it: its leader (-1: none), replicas and ISR."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterHealth:
    """The nodes that answer and the state of every partition (internal topics included)."""

    #: node id -> ``host:port`` of every node in the metadata (the ones that answer).
    answering: dict[int, str]
    partitions: tuple[PartitionState, ...]
    #: topic -> its ``min.insync.replicas`` (read only for topics with a shrunk ISR).
    min_insync: dict[str, int] = field(default_factory=dict)
    #: Entries of the bootstrap list that are no node's address and take no connection (a
    #: typo, a decommissioned host): clients skip them, so nothing else would ever say so.
    silent_bootstrap: tuple[str, ...] = ()

    @property
    def known(self) -> set[int]:
        """Every node the cluster has: answering, or named as a replica."""
        named = {r for p in self.partitions for r in p.replicas}
        return set(self.answering) | named

    @property
    def lost(self) -> list[int]:
        return sorted(self.known - set(self.answering))

    @property
    def offline(self) -> list[PartitionState]:
        return [p for p in self.partitions if p.leader < 0]

    @property
    def under_replicated(self) -> list[PartitionState]:
        return [p for p in self.partitions if p.leader >= 0 and len(p.isr) < len(p.replicas)]

    @property
    def below_min_insync(self) -> list[PartitionState]:
        return [p for p in self.under_replicated if len(p.isr) < self.min_insync.get(p.topic, 1)]

    def held_by(self, node: int) -> int:
        """Partitions with a replica on ``node``."""
        return sum(1 for p in self.partitions if node in p.replicas)

    def led_only_by(self, node: int) -> list[PartitionState]:
        """Offline partitions whose only replica in sync was ``node``: they wait for it."""
        return [p for p in self.offline if set(p.isr) <= {node} and node in p.replicas]

    @property
    def whole(self) -> bool:
        return not self.lost and not self.offline and not self.under_replicated

    def summary(self) -> str:
        """``3 of 3 nodes answer; 105 partitions, 0 offline, 0 under-replicated``."""
        counts = Counter(len(p.replicas) for p in self.partitions)
        replication = "/".join(str(r) for r in sorted(counts)) or "-"
        return (f"{len(self.answering)} of {len(self.known)} nodes answer; "
                f"{len(self.partitions)} partitions (replicas {replication}), "
                f"{len(self.offline)} offline, {len(self.below_min_insync)} below "
                f"min.insync.replicas, {len(self.under_replicated)} under-replicated")  # fmt: skip

    def problems(self) -> list[str]:
        """One line per lost node and per kind of short partition, each with what to do."""
        lines = []
        for node in self.lost:
            waiting = self.led_only_by(node)
            wait = f", {len(waiting)} of them offline until it returns" if waiting else ""
            lines.append(f"node {node} LOST: it held replicas of {self.held_by(node)} "
                         f"partitions{wait}")  # fmt: skip
        if self.offline:
            lines.append(
                f"{len(self.offline)} partitions OFFLINE (no leader: {_names(self.offline)}): "
                "their records wait, the others flow; bring their node back (a topic with one "
                "replica has no other: `mesh topics apply` reports it as drift)"
            )
        below = self.below_min_insync
        if below:
            lines.append(
                f"{len(below)} partitions below min.insync.replicas ({_names(below)}): acks=all "
                "producers are refused there and hold the records until a replica returns"
            )
        if self.silent_bootstrap and not self.lost:  # with a node lost, its address is silent
            lines.append(
                f"bootstrap {', '.join(self.silent_bootstrap)} does not answer (the cluster's "
                f"nodes: {', '.join(self.answering[n] for n in sorted(self.answering))}): clients "
                "skip it; fix or remove it in MESH_BOOTSTRAP_SERVERS"
            )
        shrunk = [p for p in self.under_replicated if p not in below]
        if shrunk:
            lines.append(
                f"{len(shrunk)} partitions under-replicated (ISR shrunk: {_names(shrunk)}): "
                "served, but one more lost node from stalling; bring the lost node back"
            )
        return lines


def read_cluster_health(
    bootstrap: str, login: Mapping[str, Any] | None = None, timeout: float = 5.0
) -> ClusterHealth:
    """Ask the cluster (any node that answers) for its metadata; KafkaException if none does."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2, **(login or {})})
    metadata = admin.list_topics(timeout=timeout)
    answering = {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()
                 if _accepts(str(b.host), int(b.port))}  # fmt: skip
    partitions = tuple(
        PartitionState(name, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
        for name, topic in sorted(metadata.topics.items())
        for p in sorted(topic.partitions.values(), key=lambda p: p.id)
    )
    silent = _silent_entries(bootstrap, set(answering.values()))
    health = ClusterHealth(answering, partitions, silent_bootstrap=silent)
    shrunk = sorted({p.topic for p in health.under_replicated})
    if not shrunk:
        return health
    return replace(health, min_insync=_min_insync(admin, shrunk, timeout))


def _silent_entries(bootstrap: str, nodes: set[str]) -> tuple[str, ...]:
    """The bootstrap list's entries that are no answering node's address and refuse a
    connection (a name that resolves to a node's address counts as that node)."""
    silent = []
    for host, port in broker_addresses(bootstrap):
        if f"{host}:{port}" in nodes or _accepts(host, port):
            continue
        silent.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return tuple(silent)


def _accepts(host: str, port: int, timeout: float = 1.0) -> bool:
    """A node takes connections. The metadata lists a killed node until the controller fences
    it (broker.session.timeout.ms, 9 s by default): a status asked in between must not call
    the cluster whole."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _min_insync(admin: Any, topics: list[str], timeout: float) -> dict[str, int]:
    """Each topic's ``min.insync.replicas``; a topic whose config cannot be read is left out
    (it then counts as 1: never reported below it on a guess)."""
    found = {}
    resources = [ConfigResource("topic", t) for t in topics]
    for resource, future in admin.describe_configs(resources, request_timeout=timeout).items():
        try:
            entry = future.result(timeout=timeout + 1).get("min.insync.replicas")
        except Exception:  # one topic's answer missing: judge the others
            continue
        if entry is not None and str(entry.value).isdigit():
            found[resource.name] = int(entry.value)
    return found


def _names(partitions: list[PartitionState], shown: int = 4) -> str:
    """``alerts[2], raw.transactions[5] and 7 more``."""
    names = [f"{p.topic}[{p.partition}]" for p in partitions[:shown]]
    more = f" and {len(partitions) - shown} more" if len(partitions) > shown else ""
    return ", ".join(names) + more
