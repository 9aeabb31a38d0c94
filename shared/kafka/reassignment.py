"""Raising a live topic's replication by a partition reassignment (`mesh topics apply
--raise-replication`, issue 48).

A topic created with fewer replicas than its declaration asks for (on one broker, or before the
cluster grew) goes offline with the one broker that holds a partition, and loses what that broker
had acknowledged. Kafka raises a topic's replication only by reassigning its partitions: each
gets a longer replica list, the controller adds the new replicas, they copy the log and join the
ISR, and clients notice nothing. confluent-kafka has no call for it (Java's
``Admin.alterPartitionReassignments``), so the request goes over the wire
(AlterPartitionReassignments v0, :mod:`shared.kafka.wire`), to whichever broker answers first
(brokers pass it on to the controller).

The plan keeps every current replica in its place (the leader stays first, so no leadership
moves) and adds the brokers holding the fewest replicas so far, so copies spread evenly.
"""

from __future__ import annotations

import struct
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from shared.endpoints import broker_addresses
from shared.errors import MeshError
from shared.kafka.wire import (
    NO_TAGS,
    Connection,
    WireError,
    compact_array,
    compact_string,
)

ALTER_PARTITION_REASSIGNMENTS = 45
TopicPartition = tuple[str, int]
#: A reassignment's plan: each partition's whole new replica list.
Plan = dict[TopicPartition, tuple[int, ...]]


class ReassignmentError(MeshError):
    """The cluster refused a reassignment, or it did not finish in time; the message says which
    partitions and why."""


def plan_raise(
    current: Mapping[TopicPartition, Sequence[int]], brokers: Sequence[int], target: int
) -> Plan:
    """New replica lists for the partitions with fewer than ``target`` replicas (at most one per
    broker): the current ones first, then the least loaded brokers (ties: the lower id)."""
    load = Counter({broker: 0 for broker in brokers})
    for replicas in current.values():
        load.update(r for r in replicas if r in load)
    plan: Plan = {}
    for partition in sorted(current):
        replicas = list(current[partition])
        wanted = min(target, len(set(brokers) | set(replicas)))
        while len(replicas) < wanted:
            pick = min((b for b in brokers if b not in replicas), key=lambda b: (load[b], b))
            replicas.append(pick)
            load[pick] += 1
        if len(replicas) > len(current[partition]):
            plan[partition] = tuple(replicas)
    return plan


def request_reassignment(
    bootstrap: str, login: Mapping[str, Any], plan: Plan, timeout_s: float = 30.0
) -> None:
    """Ask the cluster to move to ``plan``; it answers at once and copies in the background."""
    by_topic: dict[str, list[bytes]] = {}
    for (topic, partition), replicas in sorted(plan.items()):
        encoded = compact_array([struct.pack(">i", r) for r in replicas])
        by_topic.setdefault(topic, []).append(struct.pack(">i", partition) + encoded + NO_TAGS)
    topics = [compact_string(t) + compact_array(p) + NO_TAGS for t, p in by_topic.items()]
    body = struct.pack(">i", int(timeout_s * 1000)) + compact_array(topics) + NO_TAGS
    failures = []
    for host, port in broker_addresses(bootstrap):
        try:
            with Connection(host, port, login, timeout_s) as broker:
                answer = broker.request(ALTER_PARTITION_REASSIGNMENTS, 0, body, flexible=True)
            break
        except WireError as error:
            failures.append(f"{host}:{port}: {error}")
    else:
        raise ReassignmentError("no broker answered the reassignment: " + "; ".join(failures))
    answer.int32()  # throttle time
    code, message = answer.int16(), answer.string(compact=True)
    if code:
        raise ReassignmentError(f"the cluster refused the reassignment: {message or code}")
    refused = []
    for _topic in range(answer.compact_length()):
        name = answer.string(compact=True)
        for _partition in range(answer.compact_length()):
            partition, failed, why = answer.int32(), answer.int16(), answer.string(compact=True)
            answer.skip_tags()
            if failed:
                refused.append(f"{name}[{partition}]: {why or f'error {failed}'}")
        answer.skip_tags()
    if refused:
        raise ReassignmentError("the cluster refused to reassign " + "; ".join(refused))


def wait_reassigned(admin: Any, plan: Plan, timeout_s: float) -> None:
    """Until every planned partition has its new replicas, all in sync."""
    deadline = time.monotonic() + timeout_s
    while True:
        topics = admin.list_topics(timeout=10).topics
        pending = [f"{t}[{p}]" for (t, p), replicas in sorted(plan.items())
                   if not _in_sync(topics, t, p, replicas)]  # fmt: skip
        if not pending:
            return
        if time.monotonic() > deadline:
            raise ReassignmentError(
                f"{len(pending)} partition(s) not fully replicated {timeout_s:.0f} s after the "
                f"reassignment ({', '.join(pending[:4])}): a new replica is still copying or a "
                "broker it needs is down; `mesh status` shows which, and a later "
                "`mesh topics apply --raise-replication` picks up where this one stopped"
            )
        time.sleep(0.5)


def _in_sync(topics: Any, topic: str, partition: int, replicas: tuple[int, ...]) -> bool:
    metadata = topics.get(topic)
    state = metadata.partitions.get(partition) if metadata else None
    if state is None:
        return False
    return set(state.replicas) == set(replicas) and set(replicas) <= set(state.isrs)
