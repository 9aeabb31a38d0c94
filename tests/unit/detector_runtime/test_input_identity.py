"""An input deleted and re-created is noticed by its id; a missing one is paused until it is
back; an unanswered check judges nothing. The admin client and consumer are small recording
stand-ins: this is the bookkeeping; the real thing on a broker is the reliability suite's case 7
(chaos/topic_faults.py, short form in tests/integration/test_chaos_short.py)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException

from services.detector_runtime.input_identity import (
    REPORT,
    InputIdentity,
    InputWatch,
    from_start_on_assign,
    pause_missing,
    report,
)


class Cluster:
    """describe_topics answers from ``ids``; a topic not in it is unknown, one in ``silent``
    gets no answer."""

    def __init__(self, ids: dict[str, str]) -> None:
        self.ids, self.silent = dict(ids), set()

    def describe_topics(self, collection, request_timeout):  # type: ignore[no-untyped-def]
        futures = {}
        for topic in collection.topic_names:
            future: Future = Future()
            if topic in self.silent:
                future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
            elif topic in self.ids:
                future.set_result(SimpleNamespace(topic_id=self.ids[topic]))
            else:
                future.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
            futures[topic] = future
        return futures


def test_a_new_id_under_the_same_name_is_said_once() -> None:
    cluster = Cluster({"in.a": "id1", "in.b": "id2"})
    identity = InputIdentity(cluster, ["in.a", "in.b"])
    assert identity.recreated() == []
    cluster.ids["in.a"] = "id9"
    assert identity.recreated() == ["in.a"]
    assert identity.recreated() == []  # the new id is remembered


def test_a_missing_input_is_reported_missing_and_an_unanswered_one_is_not_judged() -> None:
    cluster = Cluster({"in.a": "id1", "in.b": "id2"})
    identity = InputIdentity(cluster, ["in.a", "in.b"])
    del cluster.ids["in.a"]
    cluster.silent.add("in.b")
    assert identity.recreated() == [] and identity.missing == {"in.a"}
    cluster.ids["in.a"] = "id3"
    cluster.silent.clear()
    assert identity.recreated() == ["in.a"] and identity.missing == set()


class Consumer:
    def __init__(self, assigned: list[tuple[str, int]]) -> None:
        self.assigned = assigned
        self.paused: set[tuple[str, int]] = set()

    def assignment(self):  # type: ignore[no-untyped-def]
        return [SimpleNamespace(topic=t, partition=p) for t, p in self.assigned]

    def pause(self, partitions):  # type: ignore[no-untyped-def]
        self.paused |= {(p.topic, p.partition) for p in partitions}

    def resume(self, partitions):  # type: ignore[no-untyped-def]
        self.paused -= {(p.topic, p.partition) for p in partitions}


def test_the_partitions_of_a_missing_input_are_paused_until_it_is_back() -> None:
    consumer = Consumer([("in.a", 0), ("in.a", 1), ("in.b", 0)])
    paused = pause_missing(consumer, {"in.a"}, set())
    assert consumer.paused == {("in.a", 0), ("in.a", 1)} and paused == {"in.a"}
    assert pause_missing(consumer, set(), paused) == set() and consumer.paused == set()


def test_a_re_created_topic_s_partitions_start_at_the_beginning_when_assigned() -> None:
    partitions = [SimpleNamespace(topic="in.a", partition=0, offset=-1001),
                  SimpleNamespace(topic="in.b", partition=0, offset=-1001)]  # fmt: skip
    from_start_on_assign(partitions, ["in.a"])
    assert [p.offset for p in partitions] == [OFFSET_BEGINNING, -1001]
    assert REPORT in report(["in.a"])


def test_the_watch_moves_a_re_created_input_to_its_start_drops_its_commits_and_says_so() -> None:
    from services.detector_runtime.commits import OffsetCommitter

    cluster = Cluster({"in.a": "id1", "in.b": "id2"})
    consumer = Consumer([("in.a", 0), ("in.b", 0)])
    consumer.seeks = []  # type: ignore[attr-defined]
    consumer.seek = lambda tp: consumer.seeks.append((tp.topic, tp.partition, tp.offset))  # type: ignore[attr-defined]
    committer = OffsetCommitter(consumer)
    committer._pending = {("in.a", 0): 3000, ("in.b", 0): 7}
    status = SimpleNamespace(said=[])
    status.incident = status.said.append
    watch = InputWatch(InputIdentity(cluster, ["in.a", "in.b"]), consumer, committer, status)
    cluster.ids["in.a"] = "id5"
    watch.check()
    assert consumer.seeks == [("in.a", 0, OFFSET_BEGINNING)]  # type: ignore[attr-defined]
    assert committer.pending == {("in.b", 0): 7}
    assert len(status.said) == 1 and REPORT in status.said[0]


def test_the_watch_drops_the_uncommitted_offsets_of_a_deleted_input_and_pauses_it() -> None:
    from services.detector_runtime.commits import OffsetCommitter

    cluster = Cluster({"in.a": "id1", "in.b": "id2"})
    consumer = Consumer([("in.a", 0), ("in.b", 0)])
    committer = OffsetCommitter(consumer)
    committer.stage({("in.a", 0): 40, ("in.b", 0): 9}, records=5)
    committer._pending = {("in.a", 0): 30}
    watch = InputWatch(InputIdentity(cluster, ["in.a", "in.b"]), consumer, committer, None)
    del cluster.ids["in.a"]
    watch.check()
    assert committer.pending == {} and committer.staged == {("in.b", 0): 9}
    assert consumer.paused == {("in.a", 0)}
