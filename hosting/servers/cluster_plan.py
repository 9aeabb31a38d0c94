"""Where the nodes of a local multi-broker Kafka cluster listen, decided once and kept.

A KRaft cluster with a static controller quorum names every voter (``id@host:port``) in every
node's configuration, and a node that comes back after a kill must find the others where they
were. So the first start of a cluster chooses all its ports and its cluster id at once and writes
them to ``MESH_HOME/kafka/cluster.json``; every later start of any node reads them from there. A
single broker has no plan: it keeps choosing its ports at each start as it always has.

Each node is combined (``broker,controller``): three JVMs on a 2-core machine, not six, and losing
one node loses one voter of three, which the quorum survives (docs/architecture.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from shared.endpoints import cluster_file
from shared.errors import MeshError
from shared.kafka.replication import DECLARED, Durability, fitted


@dataclass(frozen=True)
class NodePlan:
    """One node: its id (1..N), the clients' port and the controller quorum's port."""

    node: int
    port: int
    controller_port: int


@dataclass(frozen=True)
class ClusterPlan:
    """The whole cluster: the loopback host, the KRaft cluster id and every node."""

    host: str
    cluster_id: str
    nodes: tuple[NodePlan, ...]

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def voters(self) -> str:
        """``controller.quorum.voters``: every node votes."""
        return ",".join(f"{n.node}@{self.host}:{n.controller_port}" for n in self.nodes)

    @property
    def bootstrap(self) -> str:
        """Every node's client address: a client finds the cluster while any one of them runs."""
        return ",".join(f"{self.host}:{n.port}" for n in self.nodes)

    @property
    def internal_durability(self) -> Durability:
        """Replication of the broker's own topics (consumer offsets, transactions): what the
        mesh declares for its topics, fitted to the nodes."""
        return fitted(DECLARED, self.size)

    def node(self, node: int) -> NodePlan:
        for plan in self.nodes:
            if plan.node == node:
                return plan
        raise MeshError(f"the local Kafka cluster has nodes 1-{self.size}, not {node}")

    def save(self, home: Path) -> None:
        path = cluster_file(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        nodes = [{"node": n.node, "port": n.port, "controller_port": n.controller_port}
                 for n in self.nodes]  # fmt: skip
        path.write_text(json.dumps({"host": self.host, "cluster_id": self.cluster_id,
                                    "nodes": nodes}, indent=1) + "\n")  # fmt: skip

    @classmethod
    def load(cls, home: Path) -> ClusterPlan | None:
        """The plan of this MESH_HOME's cluster, or None when it has a single broker (or none)."""
        try:
            raw = json.loads(cluster_file(home).read_text())
            nodes = tuple(NodePlan(int(n["node"]), int(n["port"]), int(n["controller_port"]))
                          for n in raw["nodes"])  # fmt: skip
            return cls(str(raw["host"]), str(raw["cluster_id"]), nodes)
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as error:
            raise MeshError(
                f"{cluster_file(home)} is damaged ({error}): stop the cluster's nodes and use a "
                "fresh MESH_HOME"
            ) from None
