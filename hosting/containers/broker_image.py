"""The broker image's settings: the local mesh's, with a placeholder for what differs by node.

One image serves a single broker (`mesh compose up`) and each node of a 3-node cluster (`mesh
compose up --brokers 3`, infra/compose/docker-compose.cluster.yml), so its ``server.properties``
is a template its entrypoint (infra/images/kafka-entrypoint.sh) fills in from the container's
environment: the ports and hosts, the node id, the controller quorum's voters, and the
replication of the broker's own topics (consumer offsets, transactions). Which settings carry
that replication is read from :func:`hosting.servers.broker.broker_properties` itself (those
that change between one replica and a cluster's), so the image cannot drift from the local
mesh's brokers. What only a cluster needs (fast fencing of a lost node) is a second file the
entrypoint appends when the broker's topics are replicated.
"""

from __future__ import annotations

from hosting.servers.broker import ALONE, CLUSTER_ONLY, Durability, broker_properties

#: What the entrypoint replaces, and the container variable it takes the value from.
NODE, VOTERS, REPLICAS, MIN_ISR = "@NODE@", "@VOTERS@", "@REPLICAS@", "@MIN_ISR@"

#: A cluster's replication, to find the settings that carry it (any values above one would do).
_CLUSTER = Durability(3, 2)


def server_template() -> str:
    """``server.properties.in``: every node's settings, node-specific values as placeholders."""
    alone = _parse(_rendered(ALONE))
    cluster = _parse(_rendered(_CLUSTER))
    lines = []
    for key, value in alone.items():
        if key == "node.id":
            value = NODE
        elif cluster.get(key) == str(_CLUSTER.replication) != value:
            value = REPLICAS
        elif cluster.get(key) == str(_CLUSTER.min_insync) != value:
            value = MIN_ISR
        lines.append(f"{key}={value}\n")
    return "".join(lines)


def cluster_settings() -> str:
    """``cluster.properties``: appended to a node whose broker topics are replicated."""
    return "".join(f"{key}={value}\n" for key, value in CLUSTER_ONLY.items())


def _rendered(internal: Durability) -> str:
    return broker_properties(
        "127.0.0.1", "@PORT@", "@CONTROLLER_PORT@", "/var/lib/kafka",
        listen_host="@LISTEN_HOST@", advertised_host="@ADVERTISED_HOST@", voters=VOTERS,
        internal=internal,
    )  # fmt: skip


def _parse(properties: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in properties.splitlines() if "=" in line)
