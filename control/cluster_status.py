"""``mesh status``'s Kafka lines: every node, and what a lost one left short.

One broker answering with nothing short stays the one line it always was (``broker UP pid ...``).
A cluster gets a line per node (the local one's pids; an external one's addresses from its
metadata) and, when something is short, a line per problem with what to do
(:mod:`shared.kafka.cluster_health`). A cluster that does not answer at all is said in one line,
and status goes on to the services: they say for themselves what they wait for. A container
mesh's cluster gets the same lines below its containers' (:func:`cluster_lines`).
"""

from __future__ import annotations

from hosting.servers.kafka_cluster import NodeState
from shared.kafka.cluster_health import ClusterHealth, read_cluster_health
from shared.kafka.security import client_security
from shared.settings import Settings


def kafka_lines(settings: Settings, bootstrap: str, local: list[NodeState]) -> None:
    """Print the Kafka lines; ``local``: the local Kafka's nodes (empty: an external cluster)."""
    health = _health(settings, bootstrap)
    if health is None:
        return
    if len(local) == 1 and local[0].info and health.whole and len(health.known) == 1:
        info = local[0].info
        print(f"broker   UP     pid {info.pid}  {info.bootstrap}")
        return
    _print_cluster(health, local)


def cluster_lines(settings: Settings, bootstrap: str) -> None:
    """A container mesh's cluster, as an external one's (its containers have their own lines):
    nothing for a single broker with nothing short, which its container's line says."""
    health = _health(settings, bootstrap)
    if health is not None and not (health.whole and len(health.known) == 1):
        _print_cluster(health, [])


def _health(settings: Settings, bootstrap: str) -> ClusterHealth | None:
    """The cluster's health; None, said in one line, when no node answered in time."""
    try:
        return read_cluster_health(bootstrap, client_security(settings))
    except Exception as error:  # say so, and go on
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"broker   ?      {bootstrap}: no answer ({reason})")
        return None


def _print_cluster(health: ClusterHealth, local: list[NodeState]) -> None:
    state = "UP" if health.whole else ("DOWN" if not health.answering else "PART")
    print(f"kafka    {state:<6} {health.summary()}")
    for line in _node_lines(health, local):
        print(f"  {line}")
    for line in health.problems():
        print(f"  ! {line}")


def _node_lines(health: ClusterHealth, local: list[NodeState]) -> list[str]:
    if local:
        return [
            f"node {n.node:<3} {n.address:<21} "
            + (f"UP    pid {n.info.pid}" if n.info and n.node in health.answering
               else f"UP    pid {n.info.pid} (not in the cluster's metadata yet)" if n.info
               else f"DOWN  (bring it back: mesh broker start --node {n.node})")
            for n in local
        ]  # fmt: skip
    return [
        f"node {node:<3} {health.answering.get(node, '?'):<21} "
        + ("UP" if node in health.answering else "LOST (not answering)")
        for node in sorted(health.known)
    ]
