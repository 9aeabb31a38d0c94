"""The frame the ingest cases share: the ingest job as the real service, on topics of its own.

The job runs as `mesh up` runs it (``python -m services.ingest.job`` under its supervisor) on a
case's private raw, records, dead-letter and window topics, fed by the load generator (5 %
invalid records). Where each raw record went is read back from the outputs: a routed record
names its source in the ``mesh.source`` header, a dead letter in its ``source_*`` fields. A raw
record's identity is its coordinates (topic:partition:offset); the broker gave them, so the
acknowledged records of a partition are exactly its offsets below the high watermark (nothing
else writes to a case's raw topics).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from chaos.replay_scope import Routing, routing_of
from chaos.smoke import SmokeFigures
from control.launch.ingest import ingest_process, start_ingest
from shared.avro import AvroDeserializer
from shared.kafka.apply import apply_topics
from shared.kafka.config import admin_config, consumer_config
from shared.kafka.inspect import watermarks
from shared.kafka.topics import TopicSpec
from shared.local_process import LocalProcess
from shared.service_files import REAL_TIME
from shared.settings import Settings
from shared.spark_checkpoint import await_committed, committed_kafka_offsets
from shared.topic_names import TopicNames
from testkit.detector_runs import read_to_end, read_topic
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka

#: The raw record types a case feeds (two, so the pattern subscription really matters).
TYPES = ("transactions", "logins")
#: Records per micro-batch at most: what one uncommitted batch can route again.
BATCH = 1500
#: Event rate of the generated stream (its event times), records per second.
EVENT_RATE = 400


@dataclass(frozen=True)
class IngestMesh:
    settings: Settings
    prefix: str
    mode: str
    #: real-time routing's checkpoint interval (what a kill can replay), seconds
    interval_s: int

    @classmethod
    def create(cls, settings: Settings, work: Path, mode: str, interval_s: int = 10,
               partitions: int = 4) -> IngestMesh:  # fmt: skip
        """Fresh topics on ``settings``' broker and a MESH_HOME under ``work`` for the job."""
        prefix = f"chaos-{uuid.uuid4().hex[:8]}"
        mesh = cls(replace(settings, home=work / "home"), prefix, mode, interval_s)
        big = {"max.message.bytes": "4194304"}
        _create(mesh.settings, [*mesh.raw, *mesh.records], partitions, big)
        _create(mesh.settings, [mesh.invalid], 2, big)
        _create(mesh.settings, [mesh.windows], 2, {"cleanup.policy": "compact"})
        return mesh

    @property
    def names(self) -> TopicNames:
        """The case's topics: the mesh's names under ``<prefix>.``."""
        return TopicNames(f"{self.prefix}.")

    @property
    def raw(self) -> list[str]:
        return [self.names.raw(t) for t in TYPES]

    @property
    def records(self) -> list[str]:
        return [self.names.records(t) for t in TYPES]

    @property
    def invalid(self) -> str:
        return self.names.invalid

    @property
    def windows(self) -> str:
        return self.names.windows

    @property
    def outputs(self) -> list[str]:
        return [*self.records, self.invalid]

    @property
    def process(self) -> LocalProcess:
        return ingest_process(self.settings)

    @property
    def checkpoints(self) -> Path:
        return self.settings.home / "ingest" / "checkpoints"

    def start(self, **extra: str) -> None:
        """The job under its supervisor (as `mesh up` starts it), with ``extra`` MESH_INGEST_*
        settings on top of the case's topics.

        Micro-batch routing reads at most BATCH records a batch, so a kill lands mid-backlog.
        The window-counting query, which `mesh up` spaces 5 s apart, reads under the same cap;
        here it counts back to back (its setting before issue 20), and uncapped when routing is
        real-time (which takes no cap, so the cap would slow only the counts), else a 20 000
        record run's counts take a minute to add up. What a case checks, exact counts across a
        fault, depends on neither."""
        capped = (
            {} if self.mode == REAL_TIME else {"MESH_INGEST_MAX_OFFSETS_PER_TRIGGER": str(BATCH)}
        )
        env = {
            "MESH_INGEST_MODE": self.mode,
            "MESH_INGEST_RAW_PATTERN": self.names.raw_pattern,
            "MESH_INGEST_RECORDS_PREFIX": self.names.records_family,
            "MESH_INGEST_INVALID_TOPIC": self.invalid,
            "MESH_INGEST_WINDOWS_TOPIC": self.windows,
            "MESH_INGEST_CHECKPOINT_DIR": str(self.checkpoints),
            "MESH_INGEST_CHECKPOINT_INTERVAL": f"{self.interval_s} seconds",
            "MESH_INGEST_MAX_RECORD_BYTES": str(16 * 1024),
            "MESH_INGEST_COUNTING_TRIGGER": "0 seconds",
            **capped,
            **extra,
        }
        _, started = start_ingest(self.settings, env)
        if not started:
            raise RuntimeError(f"the ingest job did not start: {self.process.tail_log(5)}")

    def routed(self) -> int:
        """Records in the outputs now (valid ones routed, invalid ones dead-lettered)."""
        return sum(self.output_ends().values())

    def wait_routed(self, count: int, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while self.routed() < count:
            if time.monotonic() > deadline:
                log = self.process.tail_log(3)
                raise TimeoutError(f"{what}: {self.routed()} of {count} routed after "
                                   f"{timeout_s:.0f} s; job log: {log}")  # fmt: skip
            time.sleep(1)

    def wait_committed(self, timeout_s: float) -> None:
        """Until routing's checkpoint holds a committed batch (a restart has one to go on from)."""
        if not await_committed(self.checkpoints / "routing", timeout_s):
            raise TimeoutError(f"routing committed no batch in {timeout_s:.0f} s; job log: "
                               f"{self.process.tail_log(3)}")  # fmt: skip

    def wait_routing_past_commit(self, records: int, timeout_s: float) -> bool:
        """Until routing has written ``records`` more since its newest commit, so a kill now
        leaves routed records uncommitted (the restart has a replay to bound); False if no
        stretch between two commits got that far in ``timeout_s`` (the kill can go on: what
        it checks stays exact, only smaller)."""
        deadline = time.monotonic() + timeout_s
        committed, start = committed_kafka_offsets(self.checkpoints / "routing"), self.routed()
        while time.monotonic() < deadline:
            now = committed_kafka_offsets(self.checkpoints / "routing")
            if now != committed:  # a new commit: count from it
                committed, start = now, self.routed()
            elif self.routed() - start >= records:
                return True
            time.sleep(0.5)  # each look opens a client: twice a second is plenty
        return False

    def wait_quiet(self, quiet_s: float = 4.0, timeout_s: float = 120.0) -> int:
        """Until routing has added nothing for ``quiet_s`` (replays included); the count then."""
        last, since, deadline = -1, time.monotonic(), time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            now = self.routed()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                break
            time.sleep(0.5)
        return last

    def watermarks(self, topics: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
        """(low, high) offsets of every partition of ``topics``."""
        consumer = Consumer(consumer_config(self.settings, f"{self.prefix}-peek"))
        try:
            found = {}
            for topic in topics:
                metadata = consumer.list_topics(topic, timeout=10).topics[topic]
                for partition in metadata.partitions:
                    where = TopicPartition(topic, partition)
                    found[(topic, partition)] = watermarks(consumer, where, 10)
            return found
        finally:
            consumer.close()

    def raw_coordinates(self) -> set[str]:
        """Every raw record the broker acknowledged (deleted since or not), as coordinates."""
        return {f"{t}:{p}:{o}" for (t, p), (_, high) in self.watermarks(self.raw).items()
                for o in range(high)}  # fmt: skip

    def routings(self) -> list[Routing]:
        """Every routed copy of a raw record now: its source's coordinates and its place in the
        outputs (a routed record names its source in a header, a dead letter in its fields)."""
        decode_invalid = AvroDeserializer("invalid_record")
        return [routing_of(m, self.invalid, decode_invalid) for m in self._read(self.outputs)]

    def sources(self, routings: list[Routing] | None = None) -> tuple[Counter, int]:
        """How often each raw record was routed (by its coordinates), and how many raw records
        landed in two places (a records topic and the dead letters: never allowed)."""
        counts: Counter = Counter()
        places: dict[str, set[str]] = {}
        for routing in self.routings() if routings is None else routings:
            counts[routing.source] += 1
            places.setdefault(routing.source, set()).add(routing.topic)
        return counts, sum(1 for p in places.values() if len(p) > 1)

    def output_ends(self) -> dict[tuple[str, int], int]:
        """The high watermark of every output partition."""
        return {where: high for where, (_, high) in self.watermarks(self.outputs).items()}

    def _read(self, topics: list[str]) -> list[Any]:
        """Every message of ``topics`` now (each read until its high watermarks' worth came)."""
        ends = self.watermarks(topics)
        return [message for topic in topics
                for message in read_topic(self.settings, topic, timeout_s=120, idle_s=1,
                                          expect=sum(h for (t, _), (_, h) in ends.items()
                                                     if t == topic))]  # fmt: skip

    def window_counts(self) -> Counter:
        """The latest count of each 1 s window (the topic is compacted by window), by status."""
        decode = AvroDeserializer("window_count")
        latest = {}
        for message in read_to_end(self.settings, self.windows):
            latest[message.key()] = decode.decode(message.value())
        counts: Counter = Counter()
        for window in latest.values():
            counts[window["status"]] += window["count"]
        return counts

    def wait_counted(self, total: int, timeout_s: float = 120.0) -> None:
        """Until the window counts add up to ``total`` and the counts query has committed every
        batch it began. Its Kafka sink is not transactional: a stop that aborts a batch after
        its counts were written leaves them on the windows topic, and a restart that finds those
        records gone counts them as skipped, so the two would disagree."""
        self.wait_windows(total, timeout_s)
        batches = self.checkpoints / "counts"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            begun = {f.name for f in (batches / "offsets").glob("[0-9]*")}
            committed = {f.name for f in (batches / "commits").glob("[0-9]*")}
            if begun and begun <= committed:
                return
            time.sleep(0.5)

    def wait_windows(self, total: int, timeout_s: float = 120.0) -> Counter:
        """The window counts once they add up to ``total`` (or what they are at the timeout)."""
        deadline = time.monotonic() + timeout_s
        while True:
            counts = self.window_counts()
            if sum(counts.values()) >= total or time.monotonic() > deadline:
                return counts
            time.sleep(2)


class RawFeed:
    """Generated raw records (5 % invalid) in slices of ``slice_s`` seconds at ``rate`` records
    per second (0: as fast as the broker takes them), from a thread until ``stop()``, or one
    slice in the caller's thread with ``send_slice()``."""

    def __init__(self, mesh: IngestMesh, rate: float, slice_s: int) -> None:
        self.settings = mesh.settings
        self.send = SendOptions(topic_prefix=mesh.names.raw_family, progress=False, rate=rate)
        self.slice = int((rate or EVENT_RATE) * slice_s)
        self.start_ms = int(time.time() * 1000) - 5_000
        self.sent = self.delivered = self.invalid = 0
        self.seed = 21
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def send_slice(self, count: int | None = None) -> None:
        count = count or self.slice
        stream = StreamConfig(start_time_ms=self.start_ms, count=count, seed=self.seed,
                              types=TYPES, invalid_share=0.05, event_rate=EVENT_RATE,
                              max_record_bytes=16 * 1024)  # fmt: skip
        report = produce_to_kafka(stream, self.send, self.settings)
        self.sent += report.delivered + report.failed
        self.delivered += report.delivered
        self.invalid += report.invalid
        self.start_ms += count * 1000 // EVENT_RATE  # the next slice's events follow on
        self.seed += 1

    def start(self) -> RawFeed:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(60)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.send_slice()


class RoutingVerdict(NamedTuple):
    figures: SmokeFigures
    #: a line for each breach of what routing guarantees
    failures: list[str]
    #: how often each raw record (by its coordinates) was routed
    sources: Counter


def routing_verdict(
    mesh: IngestMesh, feed: RawFeed, windows: Counter, routings: list[Routing] | None = None
) -> RoutingVerdict:
    """What every ingest case checks once routing is quiet: its figures, and a line for each
    breach (a record in two places, a routed record no raw record names, raw topics that do not
    hold what the feed was acknowledged, window counts that do not add up to the records).
    ``routings``: the outputs as read already (else they are read here)."""
    sources, split = mesh.sources(routings)
    acknowledged = mesh.raw_coordinates()
    failures = []
    if split:
        failures.append(f"{split} raw records landed in a records topic and the dead letters")
    strays = set(sources) - acknowledged
    if strays:
        failures.append(f"{len(strays)} routed records name no raw record, e.g. {min(strays)}")
    if len(acknowledged) != feed.delivered:
        failures.append(f"the raw topics hold {len(acknowledged)} records, the feed says "
                        f"{feed.delivered} were acknowledged")  # fmt: skip
    if sum(windows.values()) != feed.delivered or windows["INVALID"] != feed.invalid:
        failures.append(f"window counts {dict(windows)} for {feed.delivered} records "
                        f"({feed.invalid} invalid)")  # fmt: skip
    return RoutingVerdict(routing_figures(feed, sources, acknowledged), failures, sources)


def routing_figures(feed: RawFeed, sources: Counter, acknowledged: set[str]) -> SmokeFigures:
    """A case's figures from where its raw records went: *seen* are those routed at all,
    *lost* the acknowledged ones never routed, *duplicated* the routings beyond the first."""
    seen = len(acknowledged & set(sources))
    return SmokeFigures(sent=feed.sent, acknowledged=feed.delivered, seen=seen,
                        lost=len(acknowledged) - seen,
                        duplicated=sum(n - 1 for n in sources.values()),
                        out_of_order=0)  # fmt: skip


def routing_mode(log: Path) -> str | None:
    """The mode the job said it runs routing in (its JSON start line)."""
    for line in log.read_text().splitlines():
        if line.startswith('{"ingest_mode"'):
            return str(json.loads(line)["ingest_mode"])
    return None


def _create(settings: Settings, topics: list[str], partitions: int, config: dict[str, str]) -> None:
    """The case's topics, as `mesh topics apply` creates declared ones (waiting for leaders)."""

    specs = [TopicSpec(t, partitions, config=config) for t in topics]
    apply_topics(AdminClient(admin_config(settings, log_level=2)), specs, timeout=60)
