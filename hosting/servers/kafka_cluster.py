"""The mesh's own Kafka: one broker (the default) or a local cluster of N KRaft nodes on loopback.

``MESH_BROKERS`` (``mesh up --brokers N``) says how many nodes a new MESH_HOME's Kafka gets. Once
made, a MESH_HOME's Kafka keeps its size: its nodes were formatted as voters of one quorum, so a
different size needs a fresh MESH_HOME (asked for one, a one-broker default is taken to mean
"whatever is there").

A cluster starts all its missing nodes before waiting for any: a node of a static quorum only
answers once a majority of voters runs. Its bootstrap list (every node's address) is published
once every node answers, and stays while any node runs, so clients keep finding the cluster when
one node is lost; a node brought back (``mesh broker start``) rejoins at its old ports.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from hosting.servers.broker import BrokerError, BrokerInfo, LocalBroker, kraft_cluster_id
from hosting.servers.cluster_plan import ClusterPlan, NodePlan
from hosting.servers.ports import first_free
from shared.endpoints import bootstrap_file, broker_process_name, cluster_file
from shared.errors import ConfigError
from shared.file_lock import folder_lock
from shared.settings import Settings

#: Nodes a local cluster may have: every node is a JVM and a voter on this one machine.
MAX_NODES = 9


@dataclass(frozen=True)
class NodeState:
    """One node as ``mesh broker status`` shows it: where it listens, and its pid if it runs."""

    node: int
    address: str
    info: BrokerInfo | None


class LocalKafka:
    """Start, find and stop this MESH_HOME's Kafka, whatever its size."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.home

    # what is there ----------------------------------------------------------------------------
    @property
    def plan(self) -> ClusterPlan | None:
        return ClusterPlan.load(self.home)

    def size(self) -> int:
        """Nodes of this MESH_HOME's Kafka: the one made, else the one asked for."""
        plan = self.plan
        if plan is not None:
            return plan.size
        asked = self._asked()
        if self._single_made():
            if asked > 1:
                raise ConfigError(
                    f"MESH_BROKERS={asked}: this MESH_HOME's Kafka is one broker "
                    f"({self.home / 'kafka'}); use a fresh MESH_HOME for a cluster of {asked}"
                )
            return 1
        return asked

    def nodes(self) -> list[LocalBroker]:
        plan = self.plan
        if plan is None:
            return [LocalBroker(self.settings)]
        return [LocalBroker(self.settings, plan, n.node) for n in plan.nodes]

    def node(self, node: int) -> LocalBroker:
        plan = self.plan
        if plan is None:
            if node != 1:
                raise ConfigError(f"--node {node}: this MESH_HOME's Kafka is one broker (node 1)")
            return LocalBroker(self.settings)
        plan.node(node)  # says which nodes there are when there is no such node
        return LocalBroker(self.settings, plan, node)

    def states(self) -> list[NodeState]:
        plan = self.plan
        if plan is None:
            broker = LocalBroker(self.settings)
            info = broker.running()
            return [NodeState(1, info.bootstrap if info else "-", info)]
        return [NodeState(n.node, f"{plan.host}:{n.port}",
                          LocalBroker(self.settings, plan, n.node).running())
                for n in plan.nodes]  # fmt: skip

    def active_controller(self) -> int | None:
        """The node leading the KRaft controller quorum, as the nodes last wrote it down: each
        voter records every election it sees in its ``quorum-state`` file, and the highest epoch's
        leader is the current one (a dead leader's file only ever shows an older epoch). None on
        one broker, or before any election."""
        if self.plan is None:
            return None
        newest: tuple[int, int] | None = None
        for broker in self.nodes():
            state_file = broker.data_dir / "__cluster_metadata-0" / "quorum-state"
            try:
                state = json.loads(state_file.read_text())
            except (OSError, ValueError):  # not formatted yet, or mid-write: the others tell
                continue
            epoch, leader = int(state.get("leaderEpoch", -1)), int(state.get("leaderId", -1))
            if leader >= 0 and (newest is None or epoch > newest[0]):
                newest = (epoch, leader)
        return newest[1] if newest else None

    # start and stop ---------------------------------------------------------------------------
    def ensure_started(self) -> tuple[str, list[NodeState]]:
        """Start whatever node is not running and wait until every node answers; the bootstrap
        list, and the nodes this call started."""
        size = self.size()
        if size == 1:
            info, started = LocalBroker(self.settings).ensure_started()
            return info.bootstrap, [NodeState(1, info.bootstrap, info)] if started else []
        plan = self._plan_for(size)
        brokers = [LocalBroker(self.settings, plan, n.node) for n in plan.nodes]
        launched, waiting = [], []
        for broker in brokers:  # all first: a node answers only once a majority of voters runs
            info, started = broker.launch_unless_running()
            waiting.append((broker, info))
            if started:
                launched.append(broker)
        try:
            for broker, info in waiting:
                broker.wait_ready(info)
        except BaseException:
            for broker in launched:
                broker.stop(timeout=5)
            raise
        bootstrap_file(self.home).write_text(plan.bootstrap + "\n")
        launched_names = {b.name for b in launched}
        return plan.bootstrap, [s for s in self.states()
                                if broker_process_name(s.node) in launched_names]  # fmt: skip

    def start_node(self, node: int) -> tuple[BrokerInfo, bool]:
        """Start one node (a cluster's comes back at its old ports) and wait until it answers."""
        broker = self.node(node)
        if broker.plan is None:
            return broker.ensure_started()
        info, started = broker.launch_unless_running()
        broker.wait_ready(info)
        bootstrap_file(self.home).write_text(broker.plan.bootstrap + "\n")
        return broker.running() or info, started

    def stop(self, timeout: float = 30.0) -> list[NodeState]:
        """Stop every node at once; the ones that ran.

        One at a time, the last node left alone has lost its quorum: its controlled shutdown
        waits for a controller that cannot be elected, until the SIGKILL ``timeout`` later (a
        `mesh down` took 100 s so). Stopped together, they shut down as one cluster."""
        nodes = self.nodes()
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            infos = list(pool.map(lambda n: n.stop(timeout), nodes))
        bootstrap_file(self.home).unlink(missing_ok=True)
        return [NodeState(node.node.node if node.node else 1, info.bootstrap, info)
                for node, info in zip(nodes, infos, strict=True) if info]  # fmt: skip

    # the plan ---------------------------------------------------------------------------------
    def _asked(self) -> int:
        size = self.settings.brokers
        if not 1 <= size <= MAX_NODES:
            raise ConfigError(
                f"MESH_BROKERS={size} (or --brokers): a local Kafka has 1 to {MAX_NODES} nodes; "
                "use 1 for the embedded broker or 3 for a cluster that survives losing one"
            )
        return size

    def _single_made(self) -> bool:
        return (self.home / "kafka" / "data" / "meta.properties").exists()

    def _plan_for(self, size: int) -> ClusterPlan:
        """The cluster's plan, made (ports chosen, cluster id drawn) on its first start."""
        asked = self._asked()
        with folder_lock(self.home / "kafka" / "planning", BrokerError):
            plan = self.plan
            if plan is None:
                plan = self._new_plan(size)
                plan.save(self.home)
        if asked not in (1, plan.size):
            raise ConfigError(
                f"MESH_BROKERS={asked}: this MESH_HOME's Kafka was made with {plan.size} nodes "
                f"({cluster_file(self.home)}); use a fresh MESH_HOME for {asked}"
            )
        return plan

    def _new_plan(self, size: int) -> ClusterPlan:
        host = self.settings.broker_host
        taken: set[int] = set()
        nodes = []
        preferred = self.settings.broker_port
        for node in range(1, size + 1):
            port = first_free(host, preferred + node - 1 if preferred else 0, avoid=taken)
            taken.add(port)
            controller = first_free(host, preferred + 100 + node - 1 if preferred else 0,
                                    avoid=taken)  # fmt: skip
            taken.add(controller)
            nodes.append(NodePlan(node, port, controller))
        return ClusterPlan(host, kraft_cluster_id(), tuple(nodes))
