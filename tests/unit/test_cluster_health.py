"""What `mesh status` says of a cluster with a lost node: judged from metadata alone."""

import socket

from hosting.servers.broker import broker_properties
from hosting.servers.cluster_plan import ClusterPlan, NodePlan
from shared.endpoints import broker_addresses
from shared.kafka.cluster_health import ClusterHealth, PartitionState, _silent_entries
from shared.kafka.replication import Durability

ANSWERING = {2: "127.0.0.1:9093", 3: "127.0.0.1:9094"}


def _partition(topic, partition, leader, replicas, isr):
    return PartitionState(topic, partition, leader, tuple(replicas), tuple(isr))


def test_a_whole_cluster_has_no_problems():
    health = ClusterHealth({1: "a:1", 2: "a:2", 3: "a:3"},
                           (_partition("alerts", 0, 1, [1, 2, 3], [1, 2, 3]),))  # fmt: skip
    assert health.whole and health.problems() == [] and health.lost == []
    assert health.summary().startswith("3 of 3 nodes answer; 1 partitions (replicas 3), 0 offline")


def test_a_lost_node_is_seen_through_the_replicas_it_held():
    health = ClusterHealth(ANSWERING, (
        _partition("alerts", 0, 2, [1, 2, 3], [2, 3]),
        _partition("alerts", 1, 3, [3, 1, 2], [3, 2]),
        _partition("records", 0, 2, [2, 3, 1], [2, 3, 1]),
    ), {"alerts": 2})  # fmt: skip
    assert health.lost == [1] and not health.whole
    problems = health.problems()
    assert problems[0] == "node 1 LOST: it held replicas of 3 partitions"
    assert "2 partitions under-replicated (ISR shrunk: alerts[0], alerts[1])" in problems[1]
    assert health.below_min_insync == [] and health.offline == []


def test_a_replication_one_partition_on_the_lost_node_is_offline_and_waits_for_it():
    health = ClusterHealth(ANSWERING, (
        _partition("raw", 0, -1, [1], [1]),
        _partition("raw", 1, 2, [2], [2]),
        _partition("alerts", 0, 2, [2, 1], [2]),
    ), {"alerts": 2})  # fmt: skip
    assert [(p.topic, p.partition) for p in health.offline] == [("raw", 0)]
    assert [(p.topic, p.partition) for p in health.below_min_insync] == [("alerts", 0)]
    problems = health.problems()
    assert (
        problems[0] == "node 1 LOST: it held replicas of 2 partitions, 1 of them offline "
        "until it returns"
    )
    assert problems[1].startswith("1 partitions OFFLINE (no leader: raw[0])")
    assert problems[2].startswith("1 partitions below min.insync.replicas (alerts[0])")
    assert len(problems) == 3  # below min.insync is not said again as under-replicated


def test_a_cluster_plan_names_every_voter_and_node_and_round_trips(tmp_path):
    plan = ClusterPlan("127.0.0.1", "abc", (NodePlan(1, 9092, 9192), NodePlan(2, 9093, 9193),
                                            NodePlan(3, 9094, 9194)))  # fmt: skip
    assert plan.voters == "1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194"
    assert broker_addresses(plan.bootstrap) == [("127.0.0.1", 9092), ("127.0.0.1", 9093),
                                                ("127.0.0.1", 9094)]  # fmt: skip
    assert plan.internal_durability == Durability(3, 2)
    plan.save(tmp_path)
    assert ClusterPlan.load(tmp_path) == plan


def test_a_node_of_a_cluster_replicates_the_brokers_own_topics():
    text = broker_properties("127.0.0.1", 9093, 9193, "/data", node=2,
                             voters="1@h:1,2@h:2,3@h:3", internal=Durability(3, 2))  # fmt: skip
    lines = set(text.splitlines())
    assert {"node.id=2", "controller.quorum.voters=1@h:1,2@h:2,3@h:3",
            "offsets.topic.replication.factor=3", "transaction.state.log.replication.factor=3",
            "transaction.state.log.min.isr=2", "min.insync.replicas=2"} <= lines  # fmt: skip
    alone = set(broker_properties("127.0.0.1", 9092, 9093, "/data").splitlines())
    assert {"node.id=1", "controller.quorum.voters=1@127.0.0.1:9093",
            "offsets.topic.replication.factor=1"} <= alone  # fmt: skip


def test_a_bootstrap_entry_that_does_not_answer_is_named_unless_a_node_is_lost():
    nodes = {1: "127.0.0.1:9092", 2: "127.0.0.1:9093"}
    whole = ClusterHealth(nodes, (_partition("alerts", 0, 1, [1, 2], [1, 2]),),
                          silent_bootstrap=("10.0.0.9:9092",))  # fmt: skip
    assert whole.problems() == [
        "bootstrap 10.0.0.9:9092 does not answer (the cluster's nodes: 127.0.0.1:9092, "
        "127.0.0.1:9093): clients skip it; fix or remove it in MESH_BOOTSTRAP_SERVERS"
    ]
    # a lost node's own address is silent too: its LOST line says it, not a bootstrap line
    lost = ClusterHealth({2: "127.0.0.1:9093"}, (_partition("alerts", 0, 2, [1, 2], [2]),),
                         silent_bootstrap=("127.0.0.1:9092",))  # fmt: skip
    assert not any(line.startswith("bootstrap") for line in lost.problems())


def test_only_entries_that_are_no_node_and_refuse_a_connection_are_silent():
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        up, down = listening.getsockname()[1], closed.getsockname()[1]
        bootstrap = f"127.0.0.1:{up},127.0.0.1:{down},127.0.0.1:9"
        assert _silent_entries(bootstrap, {"127.0.0.1:9"}) == (f"127.0.0.1:{down}",)
