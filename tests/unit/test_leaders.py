"""Which partitions have no leader, from a metadata answer (no broker: the answer is built)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from shared.kafka.leaders import leaderless, waited_for_a_leader


class _Client:
    def __init__(self, leaders: dict[str, list[int]] | None) -> None:
        self.leaders = leaders

    def list_topics(self, timeout: float = -1) -> Any:
        if self.leaders is None:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        return SimpleNamespace(
            topics={
                topic: SimpleNamespace(
                    partitions={n: SimpleNamespace(leader=leader) for n, leader in enumerate(ids)}
                )
                for topic, ids in self.leaders.items()
            }
        )


def test_leader_minus_one_and_unknown_partitions_are_leaderless() -> None:
    client = _Client({"alerts": [1, -1, 3], "metrics": [2]})
    asked = {("alerts", 0), ("alerts", 1), ("alerts", 7), ("metrics", 0), ("gone", 0)}
    assert leaderless(client, asked) == {("alerts", 1), ("alerts", 7), ("gone", 0)}
    assert leaderless(client, []) == set()


def test_no_answer_counts_every_asked_partition_as_leaderless() -> None:
    assert leaderless(_Client(None), [("alerts", 0)]) == {("alerts", 0)}


def test_a_timed_out_delivery_waited_for_a_leader_a_refused_one_did_not() -> None:
    assert waited_for_a_leader(KafkaError(KafkaError._MSG_TIMED_OUT))
    assert waited_for_a_leader(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
    assert not waited_for_a_leader(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    assert not waited_for_a_leader("a string is no delivery error")
