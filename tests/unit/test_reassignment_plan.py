"""The plan `mesh topics apply --raise-replication` sends: every current replica kept where it is
(the leader first), the missing ones from the least loaded brokers, never two on one broker."""

from collections import Counter

from shared.kafka.reassignment import plan_raise


def test_a_topic_at_one_replica_is_raised_evenly_keeping_its_leaders():
    current = {("alerts", p): (1 + p % 3,) for p in range(6)}
    plan = plan_raise(current, [1, 2, 3], 3)
    assert set(plan) == set(current)
    for partition, replicas in plan.items():
        assert replicas[0] == current[partition][0]
        assert sorted(replicas) == [1, 2, 3]
    assert Counter(r for replicas in plan.values() for r in replicas) == {1: 6, 2: 6, 3: 6}


def test_new_replicas_go_to_the_brokers_holding_fewest():
    current = {("t", 0): (1,), ("t", 1): (1,), ("t", 2): (2,), ("t", 3): (1,)}
    plan = plan_raise(current, [1, 2, 3, 4], 2)
    added = Counter(replicas[1] for replicas in plan.values())
    assert added == {3: 2, 4: 1, 2: 1}


def test_partitions_already_at_the_target_are_left_alone():
    current = {("t", 0): (1, 2, 3), ("t", 1): (2,)}
    assert plan_raise(current, [1, 2, 3], 3) == {("t", 1): (2, 1, 3)}


def test_a_cluster_smaller_than_the_target_gives_what_it_has():
    assert plan_raise({("t", 0): (1,)}, [1, 2], 3) == {("t", 0): (1, 2)}
