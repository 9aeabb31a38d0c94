"""The detector runtime's metrics (docs/metrics.md): what an instance reports, and when.

Cost: per record the loop makes one update, the ``processing`` timer, and notes the record's
event time; the ``delay.end_to_end`` histogram takes the batch's delays in one call, counts and
rates are marked once per batch from the :class:`Counters` the loop keeps anyway, and gauges are
read only when a snapshot is taken.

When: every ``MESH_METRICS_INTERVAL_S`` (a reporter thread) and at shutdown, like every service;
and **counts travel with commits**: before the loop waits for a batch's output to be acknowledged
and commits its offsets, :meth:`RuntimeMetrics.before_commit` produces the counters' and meters'
snapshots into the same producer, so the same flush covers them (only the counts that moved since
they were last handed over: an unchanged one is on the topic already). A record whose offset is
committed is therefore always counted in a snapshot on ``metrics``, even if the process is killed
the next moment: the aggregated total can exceed the number of records (records processed twice
after a rebalance or a kill, which is what seed 004's experiment shows) but never fall short.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from services.detector_runtime.counters import Counters
from shared.metrics import MetricRegistry, MetricsReporter, add_process_gauges, instance_id
from shared.settings import Settings

log = logging.getLogger(__name__)

#: Snapshot types published with every commit: the ones that carry counts.
COUNTED = frozenset({"COUNTER", "METER"})


class RuntimeMetrics:
    """One instance's registry, its reporter and the handles the loop updates."""

    def __init__(
        self,
        settings: Settings,
        detector: str,
        instance: str,
        producer: Any | None,
        topic: str,
        *,
        state_size: Callable[[], int],
        restore_progress: Callable[[], float],
    ) -> None:
        """``producer`` None: count, but report nothing (no metrics topic to report to)."""
        registry = MetricRegistry(
            service=f"detector.{detector}",
            instance_id=instance_id(instance),
            tags={"detector": detector},
        )
        self.registry = registry
        self.records_in = registry.meter("records.in")
        self.records_out = registry.meter("records.out")
        self.alerts = registry.meter("alerts")
        #: records a restarted ingest routed again, skipped as counted already (replays.py)
        self.replayed = registry.meter("records.replayed")
        self.errors = registry.counter("errors")
        self.dead_letters = registry.counter("dead_letters")
        self.processing = registry.timer("processing")
        self.delay = registry.histogram("delay.end_to_end")
        #: Records behind the end of the assigned partitions, from librdkafka's statistics.
        self.lag: float | None = None
        registry.gauge("consumer.lag", lambda: self.lag)
        registry.gauge("state.size", state_size)
        registry.gauge("state.restore.progress", restore_progress)
        add_process_gauges(registry)
        self.reporter = (
            None
            if producer is None
            else MetricsReporter(registry, producer, topic, interval_s=settings.metrics_interval_s)
        )
        self._seen = _Seen()
        self._producer = producer

    def start(self) -> None:
        if self.reporter is not None:
            self.reporter.start()

    def after_batch(self, counters: Counters) -> None:
        """Mark what the batch added to the loop's counters (once per batch, not per record)."""
        seen, now = self._seen, _Seen.of(counters)
        self.records_in.mark(now.records - seen.records)
        self.alerts.mark(now.alerts - seen.alerts)
        self.replayed.mark(now.replayed - seen.replayed)
        self.records_out.mark(now.alerts + now.dead_letters - seen.alerts - seen.dead_letters)
        self.errors.inc(now.failed - seen.failed)
        self.dead_letters.inc(now.dead_letters - seen.dead_letters)
        self._seen = now

    def before_commit(self) -> None:
        """Counts up to this batch go out with its commit (see the module docstring)."""
        if self.reporter is None:
            return
        while True:
            try:
                self.reporter.produce(types=COUNTED, changed_only=True)
                return
            except BufferError:  # the producer's queue is full: let deliveries drain it
                self._producer.poll(0.05)

    @property
    def held(self) -> set[int]:
        """Metrics partitions that lost their leader: no snapshot goes there for now."""
        return set() if self.reporter is None else self.reporter.held

    def release(self, partitions: set[int]) -> None:
        if self.reporter is not None:
            self.reporter.release(partitions)

    def on_stats(self, stats: dict[str, Any]) -> None:
        """librdkafka statistics: the consumer lag summed over the partitions it owns."""
        lag = consumer_lag(stats)
        if lag is not None:
            self.lag = lag

    def close(self) -> None:
        """The last snapshot of everything, flushed (the caller closes the producer after)."""
        if self.reporter is not None:
            self.reporter.close()


class _Seen:
    """The counters' values at the last :meth:`RuntimeMetrics.after_batch`."""

    __slots__ = ("alerts", "dead_letters", "failed", "records", "replayed")

    def __init__(
        self, records: int = 0, alerts: int = 0, dead: int = 0, failed: int = 0, replayed: int = 0
    ) -> None:
        self.records, self.alerts, self.dead_letters, self.failed = records, alerts, dead, failed
        self.replayed = replayed

    @classmethod
    def of(cls, counters: Counters) -> _Seen:
        dead = sum(counters.dead_letters.values())
        return cls(counters.records, counters.alerts, dead, counters.failed_records,
                   counters.replayed)  # fmt: skip


def metrics_topic_exists(producer: Any, topic: str, timeout_s: float = 10.0) -> bool:
    """Whether ``topic`` exists; if not, say so once: the instance runs, unreported.

    Producing to a missing topic would hold every commit's flush for librdkafka's metadata
    timeout; `mesh up` and `mesh topics apply` create it, ad-hoc test topics may lack it.
    """
    try:
        metadata = producer.list_topics(topic, timeout=timeout_s)
        found = topic in metadata.topics and metadata.topics[topic].error is None
    except Exception as exc:  # KafkaException: the cluster did not answer in time
        log.warning("metrics are not reported: cannot look up topic %s: %s", topic, exc)
        return False
    if not found:
        log.warning("metrics are not reported: topic %s does not exist (mesh topics apply)", topic)
    return found


def consumer_lag(stats: dict[str, Any]) -> float | None:
    """Sum of ``consumer_lag`` over the partitions this consumer fetches (librdkafka statistics:
    high watermark minus committed offset; -1 while unknown, skipped). None when nothing is known,
    so the gauge keeps its last value instead of reporting a false zero."""
    total, known = 0, False
    for topic in stats.get("topics", {}).values():
        for number, partition in topic.get("partitions", {}).items():
            lag = partition.get("consumer_lag", -1)
            if number == "-1" or partition.get("fetch_state") in (None, "none") or lag < 0:
                continue
            total, known = total + lag, True
    if known:
        return float(total)
    return 0.0 if _no_assignment(stats) else None


def _no_assignment(stats: dict[str, Any]) -> bool:
    with contextlib.suppress(KeyError, TypeError):
        return int(stats["cgrp"]["assignment_size"]) == 0
    return False


def parse_stats(stats_json: str) -> dict[str, Any]:
    """librdkafka's statistics JSON, or ``{}`` when it does not parse (never raises)."""
    try:
        stats = json.loads(stats_json)
    except ValueError:
        return {}
    return stats if isinstance(stats, dict) else {}
