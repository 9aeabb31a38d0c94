"""A Spark job's query that stopped: held while a partition of its topics has (or lately had) no
leader and started again once it has one, and any other stop the job's failure, as before
(shared/spark_query_keeper.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from shared.spark_query_keeper import LEADERLESS_MEMORY_S, LOOK_S, QueryKeeper


class _JvmError(Exception):
    """What pyspark raises for a JVM exception: the message and the JVM stack as attributes."""

    def __init__(self, desc: str, stack: str) -> None:
        super().__init__(desc)
        self._desc, self._stackTrace, self._cause = desc, stack, None


TIMED_OUT = _JvmError(
    "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. "
    "Call: listOffsets on broker 2",
    "at org.apache.spark.sql.kafka010.KafkaOffsetReaderAdmin.fetchLatestOffsets",
)


@dataclass
class _Query:
    name: str
    error: BaseException | None = None

    @property
    def isActive(self) -> bool:
        return self.error is None

    def exception(self) -> BaseException | None:
        return self.error


@dataclass
class _Cluster:
    """Metadata as confluent-kafka's list_topics returns it: topic -> partition -> leader."""

    leaders: dict[str, dict[int, int]] = field(default_factory=dict)
    answers: bool = True

    def list_topics(self, timeout: float) -> Any:
        if not self.answers:
            from confluent_kafka import KafkaError, KafkaException

            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        topics = {name: SimpleNamespace(partitions={n: SimpleNamespace(leader=leader)
                                                    for n, leader in parts.items()})
                  for name, parts in self.leaders.items()}  # fmt: skip
        return SimpleNamespace(topics=topics)


class _Job:
    """Two queries like ingest's: routing reads raw.t and writes records.t; counts reads raw.t
    and writes windows. A clock the test moves."""

    def __init__(self, cluster: _Cluster, routing_error: BaseException | None = None) -> None:
        self.now = 0.0
        self.started: dict[str, list[_Query]] = {"routing": [], "counts": []}
        self.said: list[str] = []
        self.keeper = QueryKeeper(
            {name: self._starter(name) for name in self.started},
            {
                "routing": lambda t, n: t in ("raw.t", "records.t"),
                "counts": lambda t, n: t in ("raw.t", "windows"),
            },
            cluster,
            self.said.append,
            clock=lambda: self.now,
        )

    def _starter(self, name: str) -> Any:
        def start() -> _Query:
            query = _Query(name)
            self.started[name].append(query)
            return query

        return start

    def fail(self, name: str, error: BaseException) -> None:
        self.keeper.queries[name].error = error  # type: ignore[attr-defined]

    def after(self, seconds: float) -> str | None:
        self.now += seconds
        return self.keeper.look()


def _healthy() -> _Cluster:
    return _Cluster({"raw.t": {0: 1, 1: 2}, "records.t": {0: 1, 1: 2}, "windows": {0: 3}})


def test_any_other_stop_with_every_leader_there_fails_the_job() -> None:
    job = _Job(_healthy())
    job.after(0.1)
    job.fail("routing", RuntimeError("a bug"))
    assert job.after(0.5) == "query routing stopped: a bug"
    assert len(job.started["routing"]) == 1


def test_a_query_stopped_for_want_of_a_leader_waits_and_the_others_go_on() -> None:
    cluster = _healthy()
    job = _Job(cluster)
    job.after(0.1)
    cluster.leaders["records.t"][1] = -1  # routing writes there; counts does not
    job.after(LOOK_S)
    assert job.keeper.waiting() == ["routing stalls: no leader for records.t[1]"]
    job.fail("routing", TIMED_OUT)
    for _ in range(5):
        assert job.after(LOOK_S) is None
    assert job.keeper.waiting() == ["routing waits for records.t[1]"]
    assert len(job.started["routing"]) == 1 and len(job.started["counts"]) == 1
    assert job.keeper.queries["counts"].isActive
    assert any("routing stopped" in line and "records.t[1]" in line for line in job.said)

    cluster.leaders["records.t"][1] = 3
    assert job.after(LOOK_S) is None
    assert len(job.started["routing"]) == 2 and job.keeper.queries["routing"].isActive
    assert job.keeper.waiting() == []


def test_a_leader_back_before_the_stop_was_seen_still_counts_as_the_reason() -> None:
    """The source gives up ~63 s after the leader went: by then it may be back. A stop within
    LEADERLESS_MEMORY_S of a partition's last leaderless look is started again, not a failure."""
    cluster = _healthy()
    job = _Job(cluster)
    job.after(0.1)
    cluster.leaders["raw.t"][0] = -1
    job.after(LOOK_S)
    cluster.leaders["raw.t"][0] = 2
    job.after(LOOK_S)
    job.fail("counts", TIMED_OUT)
    assert job.after(0.5) is None  # held: raw.t[0] had no leader lately
    assert job.after(LOOK_S) is None  # and started again at the next look: it has one now
    assert len(job.started["counts"]) == 2

    cluster.leaders["raw.t"][1] = -1
    job.after(LOOK_S)
    cluster.leaders["raw.t"][1] = 2
    job.after(LEADERLESS_MEMORY_S + LOOK_S)
    job.fail("counts", TIMED_OUT)
    assert "query counts stopped" in (job.after(0.5) or "")  # too long ago to be the reason


def test_a_cluster_that_does_not_answer_keeps_a_query_waiting() -> None:
    cluster = _healthy()
    job = _Job(cluster)
    cluster.leaders["windows"][0] = -1
    job.after(LOOK_S)
    job.fail("counts", TIMED_OUT)
    job.after(0.5)
    cluster.answers = False
    cluster.leaders["windows"][0] = 1
    for _ in range(3):
        assert job.after(LOOK_S) is None
    assert len(job.started["counts"]) == 1
    assert job.keeper.waiting() == ["counts waits for windows[0]"]
    cluster.answers = True
    job.after(LOOK_S)
    assert len(job.started["counts"]) == 2
