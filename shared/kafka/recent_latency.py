"""The mesh's live tail latency: raw record -> alert over the last minute, read from the alerts.

Every alert carries its raw record's Kafka timestamp (the ``mesh.source.timestamp`` lineage
header, :mod:`shared.lineage`), and its own Kafka timestamp is when the detector produced it. So
reading the alerts of the last ``window_s`` seconds (``offsets_for_times`` per partition, then up
to the end) gives raw -> alert for each of them, with no benchmark running and no trace backend:
`mesh status` prints p50 / p99 / max of it, so an operator sees the tail as users feel it, and
`mesh status --latency` the same per 5 s over the last minutes, beside raw -> notification
(:mod:`control.cli.latency_view`, which reads the ``notifications`` topic the same way).

The read is bounded (``max_alerts``, newest first within each partition's window share) and asks
only; it never joins or commits a group.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition

from shared.kafka.inspect import inspecting_consumer, watermarks
from shared.lineage import source_timestamp_ms
from shared.percentiles import nearest_rank


@dataclass(frozen=True)
class Sample:
    """One record's raw record time and how long after it the record was written (ms)."""

    raw_ms: int
    latency_ms: float


#: What a record says of its latency: a Sample, or None when it says nothing (no lineage).
SampleOf = Callable[[Any], Sample | None]


@dataclass(frozen=True)
class Read:
    """What :func:`recent_samples` found, and whether it read every partition to its end in
    time (a partial read is missing the newest records of the partitions it did not finish)."""

    samples: list[Sample]
    complete: bool


@dataclass(frozen=True)
class RecentLatency:
    """raw -> alert over the last ``window_s`` seconds (ms), from ``count`` alerts."""

    window_s: float
    count: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None

    def line(self) -> str:
        if not self.count:
            return f"no alert in the last {self.window_s:.0f} s"
        return (f"raw -> alert over the last {self.window_s:.0f} s: {self.count} alerts, "
                f"p50 {self.p50_ms:.0f} ms, p99 {self.p99_ms:.0f} ms, "
                f"max {self.max_ms:.0f} ms")  # fmt: skip


def summarize(latencies_ms: list[float], window_s: float) -> RecentLatency:
    p50, p99 = nearest_rank(latencies_ms, 50), nearest_rank(latencies_ms, 99)
    return RecentLatency(window_s, len(latencies_ms), p50, p99, max(latencies_ms, default=None))


def recent_alert_latency(
    bootstrap: str,
    alerts_topic: str,
    login: Mapping[str, Any] | None = None,
    window_s: float = 60.0,
    max_alerts: int = 20_000,
    timeout: float = 5.0,
) -> RecentLatency:
    """raw -> alert of the alerts produced in the last ``window_s`` seconds."""
    since_ms = int((time.time() - window_s) * 1000)
    read = recent_samples(bootstrap, alerts_topic, since_ms, alert_sample, login, max_alerts,
                          timeout)  # fmt: skip
    return summarize([s.latency_ms for s in read.samples], window_s)


def alert_sample(message: Any) -> Sample | None:
    """An alert's raw -> alert: its own Kafka timestamp (when the detector produced it) less its
    raw record's (the lineage header)."""
    raw_ms = source_timestamp_ms(message.headers())
    if raw_ms is None:
        return None
    return Sample(raw_ms, float(message.timestamp()[1] - raw_ms))


def recent_samples(
    bootstrap: str,
    topic: str,
    since_ms: int,
    sample_of: SampleOf,
    login: Mapping[str, Any] | None = None,
    max_records: int = 20_000,
    timeout: float = 5.0,
    read_s: float | None = None,
) -> Read:
    """``sample_of`` each record of ``topic`` written since ``since_ms`` (at most ``max_records``,
    the newest of each partition's share), reading by assignment: no group joined, nothing
    committed. ``timeout``: each question to the cluster (a dead one is said that soon);
    ``read_s``: the reading (default ``timeout``)."""
    consumer = inspecting_consumer(bootstrap, f"mesh-latency-{uuid.uuid4().hex[:8]}", login)
    try:
        found = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if found is None or found.error is not None:
            return Read([], True)
        wanted = [TopicPartition(topic, p, since_ms) for p in sorted(found.partitions)]
        starts = consumer.offsets_for_times(wanted, timeout=timeout)
        ends = {p: watermarks(consumer, TopicPartition(topic, p), timeout)[1]
                for p in found.partitions}  # fmt: skip
        share = max(1, max_records // max(len(starts), 1))
        assigned = []
        for start in starts:
            end = ends[start.partition]
            if start.offset < 0 or start.offset >= end:  # nothing that recent
                continue
            assigned.append(TopicPartition(topic, start.partition, max(start.offset, end - share)))
        return _read_samples(consumer, assigned, ends, since_ms, sample_of, read_s or timeout)
    finally:
        consumer.close()


def _read_samples(
    consumer: Any,
    assigned: list[Any],
    ends: dict[int, int],
    since_ms: int,
    sample_of: SampleOf,
    timeout: float,
) -> Read:
    """The samples of the records from ``assigned`` up to ``ends`` written since ``since_ms``."""
    if not assigned:
        return Read([], True)
    consumer.assign(assigned)
    left = {tp.partition for tp in assigned}
    samples: list[Sample] = []
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=0.5):
            if message.error() is not None:
                continue
            if message.offset() + 1 >= ends[message.partition()]:
                left.discard(message.partition())
            if message.timestamp()[1] < since_ms:
                continue
            sample = sample_of(message)
            if sample is not None:
                samples.append(sample)
    return Read(samples, not left)
