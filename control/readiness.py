"""Whether the local mesh can alert yet: `mesh up` waits for it and says so.

Started is not ready. The Spark ingest job takes tens of seconds to start and plan its first
real-time batch, and a stateful detector restores its state before it reads. Records sent before
that wait in Kafka (nothing is lost), but a user who starts a load the moment `mesh up` returns
measures the start, not the mesh: a first alert 76 s later, and a backlog every later record
queues behind (issue 20).

So `mesh up` sends a *probe*: one ordinary generated record (no planted fraud) of each type the
running detectors read. The mesh is ready to alert once ingest has routed it and every running
detector's consumer group has committed past it, that is, has read, processed and acknowledged
it (the runtime commits only after a batch's output is acknowledged). A probe is sent again every
:data:`PROBE_EVERY_S` seconds while something is not ready, because a detector that starts at
``latest`` and joins after a probe never reads that one.

The probes are ordinary records and stay so: ingest counts them, and they are in the records
topics and the detectors' counts like any other (a few per `mesh up`; `mesh up --no-wait` sends
none).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from control.deploy.registry import RUNNING, Registry
from shared.detector.manifest import load_manifest
from shared.endpoints import resolve_bootstrap
from shared.kafka.config import producer_config
from shared.kafka.inspect import (
    ClusterUnreachableError,
    inspecting_consumer,
    read_group_lag,
    read_watermarks,
)
from shared.kafka.security import client_security
from shared.settings import Settings
from shared.topic_names import TopicNames
from tools.loadgen import StreamConfig
from tools.loadgen.stream import generate

#: How often a new probe is sent while the mesh is not ready.
PROBE_EVERY_S = 15.0
#: How long one question to the cluster may take.
ASK_TIMEOUT_S = 10.0
#: The record type a mesh with no running detector is probed with (ingest must still route).
DEFAULT_TYPE = "transactions"

Partition = tuple[str, int]
Say = Callable[[str], None]


@dataclass(frozen=True)
class Reader:
    """A running detector as the probe sees it: its consumer group and the topics it reads."""

    name: str
    group: str
    #: the record types it reads, and their routed topics
    inputs: tuple[str, ...]
    topics: tuple[str, ...]


@dataclass
class Probe:
    """One round of probe records: the routed topics' end offsets when it was sent and, once
    ingest has routed it, the end offsets of the partitions that grew (what a reader must have
    committed to have read it)."""

    sent_at: float
    before: dict[Partition, int]
    targets: dict[Partition, int] = field(default_factory=dict)

    @property
    def routed(self) -> bool:
        return bool(self.targets)


def grown(before: Mapping[Partition, int], now: Mapping[Partition, int],
          topics: tuple[str, ...]) -> dict[Partition, int]:  # fmt: skip
    """The partitions whose end moved since ``before``, with their end now, once every one of
    ``topics`` has such a partition (each probe record has been routed); else nothing."""
    moved = {tp: end for tp, end in now.items() if end > before.get(tp, 0)}
    if not all(any(tp[0] == topic for tp in moved) for topic in topics):
        return {}
    return moved


def has_read(targets: Mapping[Partition, int], topics: tuple[str, ...],
             committed: Mapping[Partition, int | None]) -> bool:  # fmt: skip
    """Whether a group's committed offsets are at or past every target on the topics it reads
    (a committed offset is the next one to read); False when no target is on its topics."""
    mine = {tp: end for tp, end in targets.items() if tp[0] in topics}
    return bool(mine) and all((committed.get(tp) or 0) >= end for tp, end in mine.items())


def running_readers(settings: Settings) -> list[Reader]:
    """Every deployed detector that should run, with its group and input topics."""

    names = TopicNames.of(settings)
    readers = []
    for deployment in Registry(settings.home).all():
        if deployment.desired != RUNNING or deployment.replicas < 1:
            continue
        inputs = load_manifest(Path(deployment.current.path)).inputs
        topics = tuple(names.records(t) for t in inputs)
        group = names.detector_group(deployment.name)
        readers.append(Reader(deployment.name, group, tuple(inputs), topics))
    return readers


class _Cluster:
    """The few questions the wait asks the cluster, with the mesh's own login, through clients
    kept for the whole wait: one for the routed topics' ends and one per detector group. Asked
    every second, new clients would each log in again (a TLS and SCRAM handshake on a secure
    mesh, while two Spark jobs start)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.bootstrap, self.login = resolve_bootstrap(settings), client_security(settings)
        self._ends = inspecting_consumer(self.bootstrap, "mesh-inspect", self.login)
        self._groups: dict[str, Any] = {}

    def close(self) -> None:
        for client in (self._ends, *self._groups.values()):
            client.close()

    def ends(self, topics: tuple[str, ...]) -> dict[Partition, int]:
        found = read_watermarks(self._ends, self.bootstrap, list(topics), ASK_TIMEOUT_S)
        return {(t, p): high for t, parts in found.items() for p, (_, high) in parts.items()}

    def committed(self, reader: Reader) -> Mapping[Partition, int | None]:
        """The group's committed offsets; none yet while its coordinator is not answering (a
        group that never committed has none for a moment after its first member joins)."""
        if reader.group not in self._groups:
            self._groups[reader.group] = inspecting_consumer(self.bootstrap, reader.group,
                                                             self.login)  # fmt: skip
        try:
            return read_group_lag(self._groups[reader.group], self.bootstrap, reader.group,
                                  reader.topics, ASK_TIMEOUT_S).committed  # fmt: skip
        except ClusterUnreachableError:
            return {}

    def send_probe(self, types: tuple[str, ...]) -> None:
        """One valid generated record of each type, no planted fraud, to its raw topic."""

        stream = StreamConfig(start_time_ms=int(time.time() * 1000), count=500,
                              seed=time.time_ns() % 2**31, invalid_share=0.0,
                              fraud_share=0.0)  # fmt: skip
        wanted, names = set(types), TopicNames.of(self.settings)
        # Warnings only retried (a cluster's transaction coordinator still loading) would land
        # in `mesh up`'s own output: errors only.
        producer = Producer(producer_config(self.settings, log_level=3))
        for record in generate(stream):
            if record.topic_suffix in wanted:
                wanted.discard(record.topic_suffix)
                producer.produce(names.raw(record.topic_suffix), record.value, record.key)
            if not wanted:
                break
        producer.flush(30)


#: Where `mesh up`'s user looks when something is not ready ({service}: ingest or a detector).
LOCAL_LOOK = "see `mesh status` and `mesh logs {service}`"


def wait_until_ready(
    settings: Settings,
    timeout_s: float,
    say: Say = print,
    readers: list[Reader] | None = None,
    look: str = LOCAL_LOOK,
) -> bool:
    """Probe the mesh until ingest routes and every running detector (``readers``; by default
    the deployed ones) has read a probe; say how long each took, or what is still not ready
    after ``timeout_s`` and where to ``look``. True when ready."""
    started = time.monotonic()
    readers = running_readers(settings) if readers is None else readers
    types = tuple(sorted({t for r in readers for t in r.inputs})) or (DEFAULT_TYPE,)
    routed_topics = tuple(TopicNames.of(settings).records(t) for t in types)
    cluster = _Cluster(settings)
    probes: list[Probe] = []
    waiting = {r.name: r for r in readers}
    routed_after: float | None = None
    try:
        while time.monotonic() - started < timeout_s:
            if not probes or time.monotonic() - probes[-1].sent_at >= PROBE_EVERY_S:
                probes.append(Probe(time.monotonic(), cluster.ends(routed_topics)))
                cluster.send_probe(types)
            ends = cluster.ends(routed_topics)
            for probe in probes:
                if not probe.routed:
                    probe.targets = grown(probe.before, ends, routed_topics)
            routed = [p for p in probes if p.routed]
            if not routed:
                time.sleep(1.0)
                continue
            if routed_after is None:
                routed_after = time.monotonic() - started
                say(f"ready    ingest routes: a probe record went through {routed_after:.0f} s "
                    "after the first was sent")  # fmt: skip
            waiting = {n: r for n, r in waiting.items() if not _read_one(cluster, r, routed)}
            if not waiting:
                detectors = ", ".join(r.name for r in readers) or "no detector is deployed"
                say(f"ready    to alert {time.monotonic() - started:.0f} s after the first "
                    "probe: ingest routed it and every running detector read it "
                    f"({detectors})")  # fmt: skip
                return True
            time.sleep(1.0)
    finally:
        cluster.close()
    if routed_after is None:
        say(f"not ready: ingest routed no probe record in {timeout_s:.0f} s; "
            f"{look.format(service='ingest')}")  # fmt: skip
    else:
        late = ", ".join(sorted(waiting))
        say(f"not ready: ingest routes, but {late} read no probe in {timeout_s:.0f} s; "
            f"{look.format(service='<detector>')}")  # fmt: skip
    return False


def _read_one(cluster: _Cluster, reader: Reader, routed: list[Probe]) -> bool:
    """Whether ``reader``'s group has committed past one of the ``routed`` probes."""
    committed = cluster.committed(reader)
    return any(has_read(p.targets, reader.topics, committed) for p in routed)
