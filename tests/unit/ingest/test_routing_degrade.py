"""When routing hands over: a raw partition it reads lost its leader (held, the others routed by
a fresh query), every held one has a leader again (taken back), never for a sink partition
(services/ingest/routing_degrade.py, with the real query keeper)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from chaos.replay_scope import handover_marks
from services.ingest.routing_degrade import LOST_AFTER_S, ROUTING_QUERY, RoutingDegrade
from services.ingest.routing_handover import HANDOVER_FILE, ROUTING, load
from shared.spark_query_keeper import LOOK_S, QueryKeeper


@dataclass
class _Query:
    """A running query whose batch commits at the next look at its progress."""

    batch: int = 0
    stopped: bool = False

    @property
    def isActive(self) -> bool:
        return not self.stopped

    @property
    def lastProgress(self) -> dict[str, int]:
        self.batch += 1
        return {"batchId": self.batch}

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        self.stopped = True


@dataclass
class _Cluster:
    leaders: dict[str, dict[int, int]] = field(
        default_factory=lambda: {"raw.t": {0: 1, 1: 2}, "records.t": {0: 1, 1: 2}}
    )

    def list_topics(self, timeout: float) -> Any:
        topics = {name: SimpleNamespace(partitions={n: SimpleNamespace(leader=leader)
                                                    for n, leader in parts.items()})
                  for name, parts in self.leaders.items()}  # fmt: skip
        return SimpleNamespace(topics=topics)


class _Job:
    def __init__(self, tmp: Path) -> None:
        self.cluster, self.now, self.started, self.said = _Cluster(), 0.0, [], []
        committed = tmp / ROUTING
        (committed / "offsets").mkdir(parents=True)
        (committed / "commits").mkdir()
        (committed / "offsets" / "4").write_text('v1\n{}\n{"raw.t":{"0":100,"1":200}}\n')
        (committed / "commits" / "4").write_text("v1\n{}\n")
        self.ends = {("records.t", 0): 40, ("records.t", 1): 50}
        self.degrade = RoutingDegrade(tmp, r"raw\..*", self._start, lambda: dict(self.ends), 0.5,
                                      self.said.append)  # fmt: skip
        self.keeper = QueryKeeper(
            {ROUTING_QUERY: self._start},
            {ROUTING_QUERY: lambda t, n: t == "records.t" or self.degrade.reads(t, n)},
            self.cluster,
            self.said.append,
            clock=lambda: self.now,
        )

    def _start(self) -> _Query:
        query = _Query()
        self.started.append(query)
        return query

    def look(self) -> None:
        self.now += LOOK_S
        assert self.keeper.look() is None
        self.degrade.look(self.keeper)


def test_a_lost_raw_partition_is_held_and_the_others_routed_then_taken_back(
    tmp_path: Path,
) -> None:
    job = _Job(tmp_path)
    job.look()
    assert len(job.started) == 1

    job.cluster.leaders["raw.t"][1] = -1
    seen = job.now + LOOK_S  # the next look finds it without a leader
    while job.now + LOOK_S < seen + LOST_AFTER_S:  # an election's few seconds: ridden out
        job.look()
        assert len(job.started) == 1 and not job.started[0].stopped
    job.look()
    assert job.started[0].stopped and len(job.started) == 2  # handed over to a new query
    assert job.started[0].batch == 0  # stopped at once: its batch cannot commit without raw.t[1]
    (mark,) = handover_marks(tmp_path)  # what the stopped batch may have routed, for a check
    assert mark.committed == {"raw.t": {0: 100, 1: 200}}
    assert mark.outputs == {("records.t", 0): 40, ("records.t", 1): 50}
    assert load(tmp_path).held == {"raw.t": {1: 200}}  # type: ignore[union-attr]
    assert json.loads(load(tmp_path).source_options("x")["assign"]) == {"raw.t": [0]}  # type: ignore[union-attr]
    assert job.degrade.waiting() == [
        "ingest-routing holds raw.t[1] (no leader); routes the other raw partitions"
    ]
    assert job.keeper.waiting() == []  # routing does not stall on a partition it holds
    job.look()
    assert len(job.started) == 2  # nothing more to hand over while the leader stays away

    job.cluster.leaders["raw.t"][1] = 3
    job.look()
    assert len(job.started) == 3 and job.started[1].stopped
    assert job.started[1].batch > 0  # stopped as a batch committed (every leader is there)
    assert len(handover_marks(tmp_path)) == 2
    assert load(tmp_path).held == {}  # type: ignore[union-attr]
    assert job.degrade.waiting() == []
    assert any("raw.t[1] read again from where they were left" in line for line in job.said)


def test_a_lost_records_partition_is_waited_for_not_handed_over(tmp_path: Path) -> None:
    job = _Job(tmp_path)
    job.cluster.leaders["records.t"][0] = -1
    job.look()
    job.look()
    assert len(job.started) == 1 and not job.started[0].stopped
    assert not (tmp_path / HANDOVER_FILE).exists()
    assert job.keeper.waiting() == ["ingest-routing stalls: no leader for records.t[0]"]


def test_a_raw_partition_created_while_one_is_held_is_read_without_waiting_for_the_leader(
    tmp_path: Path,
) -> None:
    """Reading named partitions, routing would not see a new one: it hands over to read it
    (from its earliest), the lost one still held."""
    job = _Job(tmp_path)
    job.look()
    job.cluster.leaders["raw.t"][1] = -1
    while len(job.started) == 1:
        job.look()
    job.cluster.leaders["raw.t"][2] = 3  # the topic grew
    job.look()
    assert len(job.started) == 3
    handover = load(tmp_path)
    assert handover.held == {"raw.t": {1: 200}}  # type: ignore[union-attr]
    assert handover.start == {"raw.t": {0: 100, 2: -2}}  # type: ignore[union-attr]
