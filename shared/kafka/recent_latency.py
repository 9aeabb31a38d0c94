"""The mesh's live tail latency: raw record -> alert over the last minute, read from the alerts.

Every alert carries its raw record's Kafka timestamp (the ``mesh.source.timestamp`` lineage
header, :mod:`shared.lineage`), and its own Kafka timestamp is when the detector produced it. So
reading the alerts of the last ``window_s`` seconds (``offsets_for_times`` per partition, then up
to the end) gives raw -> alert for each of them, with no benchmark running and no trace backend:
`mesh status` prints p50 / p99 / max of it, so an operator sees the tail as users feel it.

The read is bounded (``max_alerts``, newest first within each partition's window share) and asks
only; it never joins or commits a group.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition

from shared.kafka.inspect import inspecting_consumer, watermarks
from shared.lineage import source_timestamp_ms
from shared.percentiles import nearest_rank


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

    consumer = inspecting_consumer(bootstrap, f"mesh-latency-{uuid.uuid4().hex[:8]}", login)
    try:
        since_ms = int((time.time() - window_s) * 1000)
        topic = consumer.list_topics(alerts_topic, timeout=timeout).topics.get(alerts_topic)
        if topic is None or topic.error is not None:
            return summarize([], window_s)
        wanted = [TopicPartition(alerts_topic, p, since_ms) for p in sorted(topic.partitions)]
        starts = consumer.offsets_for_times(wanted, timeout=timeout)
        ends = {p: watermarks(consumer, TopicPartition(alerts_topic, p), timeout)[1]
                for p in topic.partitions}  # fmt: skip
        share = max(1, max_alerts // max(len(starts), 1))
        assigned = []
        for start in starts:
            end = ends[start.partition]
            if start.offset < 0 or start.offset >= end:  # nothing that recent
                continue
            assigned.append(
                TopicPartition(alerts_topic, start.partition, max(start.offset, end - share))
            )
        return summarize(_read_latencies(consumer, assigned, ends, since_ms, timeout), window_s)
    finally:
        consumer.close()


def _read_latencies(
    consumer: Any, assigned: list[Any], ends: dict[int, int], since_ms: int, timeout: float
) -> list[float]:
    """alert timestamp - raw timestamp of every alert from ``assigned`` up to ``ends``."""
    if not assigned:
        return []
    consumer.assign(assigned)
    left = {tp.partition for tp in assigned}
    latencies: list[float] = []
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=0.5):
            if message.error() is not None:
                continue
            if message.offset() + 1 >= ends[message.partition()]:
                left.discard(message.partition())
            alert_ms = message.timestamp()[1]
            raw_ms = source_timestamp_ms(message.headers())
            if raw_ms is not None and alert_ms >= since_ms:
                latencies.append(float(alert_ms - raw_ms))
    return latencies
