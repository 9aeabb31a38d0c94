"""A query of the aggregator that died of SPARK-55271 after a replay is started again in place;
any other death, or the fault again and again, fails the run as before."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.metrics_aggregator.run import AggregatorRun
from shared.spark_bugs import REPLAY_METRICS_RETRIES


class _JvmError(Exception):
    """What pyspark raises for a JVM exception: the message and the JVM stack as attributes."""

    def __init__(self, desc: str, stack: str) -> None:
        super().__init__(desc)
        self._desc, self._stackTrace, self._cause = desc, stack, None


REPLAY_FAULT = _JvmError(
    'Cannot invoke "scala.collection.IterableOps.map(scala.Function1)" because the return value '
    'of "scala.Option.get()" is null',
    "at org.apache.spark.sql.kafka010.KafkaMicroBatchStream$.metrics(KafkaMicroBatchStream.scala)",
)


@dataclass
class _Query:
    name: str
    error: BaseException | None = None

    def exception(self) -> BaseException | None:
        return self.error


def _run(query: _Query, started: list[_Query]) -> AggregatorRun:
    def start() -> Any:
        again = _Query(query.name)
        started.append(again)
        return again

    return AggregatorRun(service=None, queries=[query], targets={}, starters={query.name: start})  # type: ignore[arg-type,list-item]


def test_the_replay_fault_starts_the_query_again_in_place() -> None:
    started: list[_Query] = []
    run = _run(_Query("metrics-aggregator-series", REPLAY_FAULT), started)
    assert run.failure() is None
    assert run.queries == started and len(started) == 1


def test_the_replay_fault_again_and_again_fails_the_run() -> None:
    started: list[_Query] = []
    run = _run(_Query("metrics-aggregator-series", REPLAY_FAULT), started)
    for _ in range(REPLAY_METRICS_RETRIES):
        assert run.failure() is None
        run.queries[0].error = REPLAY_FAULT  # type: ignore[attr-defined]
    assert "query metrics-aggregator-series stopped" in (run.failure() or "")
    assert len(started) == REPLAY_METRICS_RETRIES


def test_any_other_death_fails_the_run() -> None:
    started: list[_Query] = []
    run = _run(_Query("metrics-aggregator-series", RuntimeError("broker gone")), started)
    assert run.failure() == "query metrics-aggregator-series stopped: broker gone"
    assert started == []
