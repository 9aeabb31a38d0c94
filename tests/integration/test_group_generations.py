"""Group generations read from ``__consumer_offsets``: a rebalance in one group leaves others be."""

import time

import pytest
from confluent_kafka import Consumer

from testkit.group_generations import group_generations

pytestmark = pytest.mark.integration

#: Joining, syncing and storing the group's record takes well under this on a test broker.
PATIENCE = 30.0


def join(bootstrap: str, group: str, topic: str) -> Consumer:
    """A consumer configured as our runtime's, subscribed to ``topic`` in ``group``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": "cooperative-sticky",
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )
    consumer.subscribe([topic])
    return consumer


def poll_until(consumers: list[Consumer], done, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll every consumer (their rebalances only progress while they poll) until ``done()``."""
    deadline = time.monotonic() + PATIENCE
    while not done():
        assert time.monotonic() < deadline, f"gave up after {PATIENCE:.0f} s waiting for {what}"
        for consumer in consumers:
            consumer.poll(0.1)


def assigned_partitions(consumers: list[Consumer]) -> list[int]:
    return sorted(tp.partition for c in consumers for tp in c.assignment())


def test_a_rebalance_in_one_group_leaves_the_other_groups_generation_alone(
    kafka_bootstrap, unique_name, create_topics
):
    (topic,) = create_topics([unique_name("orders")], partitions=4)
    g1, g2 = unique_name("detector-a"), unique_name("detector-b")
    consumers: list[Consumer] = []
    try:
        consumers.append(join(kafka_bootstrap, g1, topic))
        consumers.append(join(kafka_bootstrap, g2, topic))
        poll_until(
            consumers,
            lambda: all(len(c.assignment()) == 4 for c in consumers),
            "both groups to assign all 4 partitions",
        )
        before: dict[str, int] = {}

        def both_stored() -> bool:
            before.update(group_generations(kafka_bootstrap, [g1, g2]))
            return set(before) == {g1, g2}

        poll_until(consumers, both_stored, "the coordinator to store both groups' generations")

        consumers.append(join(kafka_bootstrap, g1, topic))
        g1_members = [consumers[0], consumers[2]]
        poll_until(
            consumers,
            lambda: (
                assigned_partitions(g1_members) == [0, 1, 2, 3]
                and all(c.assignment() for c in g1_members)
            ),
            "the second member of G1 to get its share of the partitions",
        )
        after: dict[str, int] = {}

        def g1_moved_on() -> bool:
            after.update(group_generations(kafka_bootstrap, [g1, g2]))
            return after.get(g1, before[g1]) > before[g1]

        poll_until(consumers, g1_moved_on, f"G1's generation to grow past {before[g1]}")
        assert after[g2] == before[g2], "G2 rebalanced although only G1 changed"
    finally:
        for consumer in consumers:
            consumer.close()


def test_groups_can_be_left_unfiltered_and_unknown_names_are_absent(kafka_bootstrap, unique_name):
    everything = group_generations(kafka_bootstrap)
    assert all(isinstance(g, int) for g in everything.values())
    assert group_generations(kafka_bootstrap, [unique_name("never-joined")]) == {}
