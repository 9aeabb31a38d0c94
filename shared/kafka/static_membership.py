"""Static group membership (KIP-345): a restarted instance takes its partitions back at once.

A consumer that dies (``kill -9``, an OOM kill, a crashed container) stays a member of its group
until its session times out: the broker waits for it before it hands its partitions to anyone,
the instance that replaces it included. With librdkafka's 45 s default, a killed notifier
delivered nothing for 53 s although its supervisor started it again within 5 s (issue 34). A
*static* member has a ``group.instance.id`` that outlives the process: when an instance with the
same id joins again, the broker gives it the dead one's partitions without a rebalance and
without waiting. The id is the replica's name (``detector-<name>-r<release>-<i>``, a container's
name, ``notifier``), stable across restarts and different for two replicas that run at once;
the rollout's new replicas have a new release number, so they never fence the old ones.

The price: a static member sends no LeaveGroup when it closes, so one that stops for good (a
scale-down, a rollout's old replica, ``mesh down``) would hold its partitions until the session
timeout. :func:`leave` sends that LeaveGroup itself after the consumer closed
(:mod:`shared.kafka.wire`), so a graceful stop still hands the partitions over at once.

A member whose *own* session expired (the broker away for longer than the timeout) joins again
under a new member id, and a request that still carries the old one is refused with
FENCED_INSTANCE_ID, which librdkafka makes a fatal error (librdkafka #3437, open): the consumer can
do nothing more. :func:`is_fatal` tells that error; the detector runtime then joins again with a
new consumer, the notifier exits for its supervisor to start it again.

Session timeouts, per service (:data:`SESSION_TIMEOUT_MS`): how long the group waits for a
member that went silent before it gives its partitions to the others. A restart within it brings
the member back with no rebalance at all (3-5 s here: supervisor backoff, Python start, join; up
to ~10 s on a loaded 2-core machine), so the timeout only bounds how long a replica that does not
come back holds its share. Shorter would turn a slow restart into two rebalances (one when the
session expires, one when the instance joins again). Detector replicas and the notifier are
restarted the same way, so they share the value.

The other bound is a lost group coordinator (issue 48): the member's heartbeats get no answer
until the cluster has fenced the dead node (5 s on the local cluster), moved its
``__consumer_offsets`` partitions and the new coordinator has loaded the group. 15 s was too
short for that on a loaded 2-core machine: after a SIGKILL of the active controller, which also
coordinated new_country's group, its session ran out 12 s after the kill, it joined again, was
fenced by its own old member id and lost its partitions: alerts from it came 30-47 s after their
raw records for half a minute while the other detectors' were 5-18 s. 30 s covers the coordinator's
fail-over, and still bounds a replica that does not come back. Heartbeats stay every 3 s
(:data:`HEARTBEAT_MS`): the members hear of a rebalance (a replica added by the autoscaler, a
rollout) at their next heartbeat.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from shared.endpoints import broker_addresses
from shared.errors import MeshError
from shared.kafka.wire import Connection, Reader, WireError, string

log = logging.getLogger(__name__)

#: Per service: the group's patience with a silent member, in ms (see the module's docstring).
SESSION_TIMEOUT_MS = {"detector": 30_000, "notifier": 30_000}
#: How often a member tells the coordinator it lives (and hears of a rebalance).
HEARTBEAT_MS = 3_000
FIND_COORDINATOR, LEAVE_GROUP = 10, 13
#: Kafka's error codes that :func:`leave` reads.
_NONE, _UNKNOWN_MEMBER_ID, _NOT_COORDINATOR = 0, 25, 16


class ConsumerFenced(MeshError):
    """A consumer's fatal error: it was fenced (see the module's docstring) and is unusable."""


def is_fatal(error: object) -> bool:
    """Whether ``error`` (a KafkaException, a KafkaError or :class:`ConsumerFenced`) says the
    consumer is unusable. A fetched message's error says so by its code only (``_FATAL``)."""
    if isinstance(error, ConsumerFenced):
        return True
    if isinstance(error, KafkaException) and error.args:
        error = error.args[0]
    return isinstance(error, KafkaError) and (error.fatal() or error.code() == KafkaError._FATAL)


def static_member_settings(service: str, instance_id: str | None) -> dict[str, Any]:
    """The consumer settings of a static member called ``instance_id`` of ``service``; none
    (a dynamic member, librdkafka's defaults) when the instance has no stable name."""
    if not instance_id:
        return {}
    session = SESSION_TIMEOUT_MS[service]
    return {
        "group.instance.id": instance_id,
        "session.timeout.ms": session,
        "heartbeat.interval.ms": HEARTBEAT_MS,
    }


def leave(config: Mapping[str, Any], timeout: float = 5.0) -> bool:
    """Take the static member of consumer ``config`` out of its group now (LeaveGroup v3 by
    ``group.instance.id``), as a dynamic member leaves when it closes. True when it left or was
    already gone; False (logged, never raised: the session timeout still ends it) otherwise."""
    instance, group = config.get("group.instance.id"), config.get("group.id")
    if not instance or not group:
        return True
    try:
        return _leave(str(config["bootstrap.servers"]), config, str(group), str(instance), timeout)
    except WireError as error:
        log.warning("static member %s did not leave group %s at once (%s): its partitions "
                    "move when its session times out", instance, group, error)  # fmt: skip
        return False


def _leave(
    bootstrap: str, login: Mapping[str, Any], group: str, instance: str, timeout: float
) -> bool:
    for _ in range(3):  # the coordinator may move between the two requests
        host, answer = _find_coordinator(bootstrap, login, group, timeout)
        answer.int32()  # throttle time
        code, message = answer.int16(), answer.string()
        if code != _NONE:
            raise WireError(f"no coordinator for group {group}: {message or f'error {code}'}")
        answer.int32()  # node id
        coordinator_host, coordinator_port = answer.string() or host, answer.int32()
        body = string(group) + struct.pack(">i", 1) + string("") + string(instance)
        with Connection(coordinator_host, coordinator_port, login, timeout) as coordinator:
            reply = coordinator.request(LEAVE_GROUP, 3, body)
        reply.int32()  # throttle time
        code = reply.int16()
        if code == _NOT_COORDINATOR:
            continue
        if code != _NONE:
            raise WireError(f"LeaveGroup refused (error {code})")
        for _member in range(reply.int32()):
            reply.string(), reply.string()  # member id, group instance id
            member_code = reply.int16()
            if member_code not in (_NONE, _UNKNOWN_MEMBER_ID):
                raise WireError(f"LeaveGroup refused for {instance} (error {member_code})")
        return True
    raise WireError(f"the coordinator of group {group} kept moving")


def _find_coordinator(
    bootstrap: str, login: Mapping[str, Any], group: str, timeout: float
) -> tuple[str, Reader]:
    """Ask the bootstrap list's brokers in turn (one of a cluster may be down) where the group's
    coordinator is; the broker that answered and its answer."""
    failures = []
    for host, port in broker_addresses(bootstrap):
        try:
            with Connection(host, port, login, timeout) as any_broker:
                return host, any_broker.request(FIND_COORDINATOR, 1, string(group) + b"\x00")
        except WireError as error:
            failures.append(f"{host}:{port}: {error}")
    raise WireError("no broker answered: " + "; ".join(failures))
