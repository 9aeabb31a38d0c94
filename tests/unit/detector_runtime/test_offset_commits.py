"""Offsets of a batch whose commit hit a rebalance are kept, then committed or counted.

The consumer here is a small recording stand-in: this is the committer's bookkeeping, a unit of
pure logic; the real broker behaviour (ILLEGAL_GENERATION while a member joins mid-batch) is
exercised by tests/integration/test_deploy_cli.py and test_isolation.py through rollouts.
"""

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from services.detector_runtime.commits import OffsetCommitter


class RecordingConsumer:
    def __init__(self, owned):
        self.owned = set(owned)
        self.failures: list[int] = []
        self.committed: list[dict] = []

    def commit(self, offsets, asynchronous):
        assert asynchronous is False
        if self.failures:
            raise KafkaException(KafkaError(self.failures.pop(0)))
        self.committed.append({(tp.topic, tp.partition): tp.offset for tp in offsets})

    def assignment(self):
        return [SimpleNamespace(topic=t, partition=p) for t, p in sorted(self.owned)]


def tp(partition):
    return SimpleNamespace(topic="in", partition=partition)


def test_a_commit_refused_by_a_rebalance_is_kept_and_retried_for_owned_partitions():
    consumer = RecordingConsumer(owned={("in", 0), ("in", 1)})
    committer = OffsetCommitter(consumer)
    consumer.failures = [KafkaError.ILLEGAL_GENERATION]
    assert committer.commit({("in", 0): 10, ("in", 1): 20}) is False
    assert committer.deferred == 1 and committer.pending == {("in", 0): 10, ("in", 1): 20}
    committer.retry_owned()
    assert consumer.committed == [{("in", 0): 10, ("in", 1): 20}] and committer.pending == {}


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,  # what a just-restarted broker answered
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
    ],
)
def test_a_commit_refused_while_the_coordinator_is_away_is_kept_and_goes_with_the_next(code):
    consumer = RecordingConsumer(owned={("in", 0)})
    committer = OffsetCommitter(consumer)
    consumer.failures = [code]
    assert committer.commit({("in", 0): 10}) is False
    assert committer.deferred == 1 and committer.pending == {("in", 0): 10}
    assert committer.commit({("in", 0): 15}) is True
    assert consumer.committed == [{("in", 0): 15}] and committer.pending == {}


def test_pending_offsets_of_a_revoked_partition_are_committed_in_the_revoke_callback():
    consumer = RecordingConsumer(owned={("in", 0), ("in", 1)})
    committer = OffsetCommitter(consumer)
    consumer.failures = [KafkaError.REBALANCE_IN_PROGRESS]
    committer.commit({("in", 0): 10, ("in", 1): 20})
    committer.on_revoke([tp(1)])
    assert consumer.committed == [{("in", 1): 20}]
    assert committer.pending == {("in", 0): 10} and committer.abandoned == 0


def test_a_later_batch_carries_the_pending_offsets_with_it():
    consumer = RecordingConsumer(owned={("in", 0), ("in", 1)})
    committer = OffsetCommitter(consumer)
    consumer.failures = [KafkaError.ILLEGAL_GENERATION]
    committer.commit({("in", 0): 10})
    assert committer.commit({("in", 1): 5}) is True
    assert consumer.committed == [{("in", 0): 10, ("in", 1): 5}]


def test_lost_partitions_count_their_uncommitted_batch():
    consumer = RecordingConsumer(owned={("in", 0)})
    committer = OffsetCommitter(consumer)
    consumer.failures = [KafkaError.UNKNOWN_MEMBER_ID]
    committer.commit({("in", 0): 10})
    committer.on_lost([tp(0)])
    assert committer.abandoned == 1 and committer.pending == {}


def test_other_commit_errors_are_not_swallowed():
    consumer = RecordingConsumer(owned={("in", 0)})
    committer = OffsetCommitter(consumer)
    consumer.failures = [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    with pytest.raises(KafkaException):
        committer.commit({("in", 0): 10})


def test_settle_polls_until_the_rebalance_lets_the_pending_commit_through():
    consumer = RecordingConsumer(owned={("in", 0)})
    polls = []
    consumer.poll = lambda timeout: polls.append(timeout)
    committer = OffsetCommitter(consumer)
    consumer.failures = [KafkaError.ILLEGAL_GENERATION, KafkaError.REBALANCE_IN_PROGRESS]
    committer.commit({("in", 0): 10})
    committer.settle(timeout=5)
    assert len(polls) == 2 and consumer.committed == [{("in", 0): 10}]
    assert committer.pending == {} and committer.abandoned == 0


def test_staged_offsets_are_taken_once_and_go_with_the_commit_after_the_flush():
    consumer = RecordingConsumer(owned={("in", 0), ("in", 1)})
    committer = OffsetCommitter(consumer)
    committer.stage({("in", 0): 10}, records=5)
    committer.stage({("in", 0): 12, ("in", 1): 3}, records=7)
    assert committer.has_staged and committer.staged_records == 12 and consumer.committed == []
    assert committer.commit(committer.take_staged()) is True
    assert consumer.committed == [{("in", 0): 12, ("in", 1): 3}]
    assert not committer.has_staged and committer.staged_records == 0
    assert committer.take_staged() == {}


def test_staged_offsets_of_a_lost_partition_are_dropped_and_counted():
    consumer = RecordingConsumer(owned={("in", 0), ("in", 1)})
    committer = OffsetCommitter(consumer)
    committer.stage({("in", 0): 10, ("in", 1): 20}, records=5)
    committer.on_lost([tp(1)])
    assert committer.staged == {("in", 0): 10} and committer.abandoned == 1


def test_staged_offsets_of_a_recreated_topic_are_forgotten():
    consumer = RecordingConsumer(owned={("in", 0), ("other", 0)})
    committer = OffsetCommitter(consumer)
    committer.stage({("in", 0): 10, ("other", 0): 4}, records=5)
    committer.forget_topics(["in"])
    assert committer.staged == {("other", 0): 4} and committer.abandoned == 0
