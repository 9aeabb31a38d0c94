"""The detector loop: consume a batch, detect, produce, wait for acks, commit. Repeat.

Delivery protocol (at-least-once): the input offsets of a batch are committed only after every
alert, dead letter and changelog update that batch produced has been acknowledged by the broker.
A crash before the commit means the batch is processed again after the restart: alerts are
produced again with the same ``alert_id`` (deduplicated downstream), and the changelog updates
of the crashed batch are ignored on restore (see :mod:`changelog`).

Everything happens on one thread, between two ``consume()`` calls; rebalance callbacks are
served inside ``consume()``, when the previous batch is already committed, so a revoked
partition never has uncommitted work. (If a rebalance made that commit fail, the offsets are
kept and committed in the revoke callback or after the next ``consume()``: :mod:`commits`.)

A batch that takes longer than ``max_batch_s`` hands its
unprocessed records back (seek) and commits what it did, so the consumer always polls again well
within ``max.poll.interval.ms`` (seed 002: slow batches, evictions, rebalance loops).

Between batches the loop also refreshes the instance's status file (:mod:`status`), at most once
a second and from counters it keeps anyway; the rebalance callbacks keep its membership numbers
and, when the manifest starts at a time, assign never-committed partitions there
(:mod:`start_position`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from services.detector_runtime.changelog import (
    RestoreStats,
    restore_partitions,
    write_changes,
)
from services.detector_runtime.commits import OffsetCommitter
from services.detector_runtime.config import RuntimeConfig
from services.detector_runtime.counters import Counters
from services.detector_runtime.error_policy import ErrorPolicy
from services.detector_runtime.input_identity import InputIdentity, InputWatch
from services.detector_runtime.instrumentation import (
    RuntimeMetrics,
    metrics_topic_exists,
    parse_stats,
)
from services.detector_runtime.record_tracing import RecordTracing
from services.detector_runtime.start_position import (
    assign_from_time,
    auto_offset_reset,
    is_cooperative,
    offsets_at_time,
)
from services.detector_runtime.status import RUNNING, Membership, Progress, StatusFile
from shared.avro import AvroDeserializer, AvroSerializer, DecodeError, EncodeError
from shared.dead_letters import (
    DECODE,
    DETECT,
    ENCODE_ALERT,
    dead_letter_headers,
)
from shared.detector import INPUT_TYPES, RetryPolicy, Task
from shared.detector.task import NOTHING_FOUND
from shared.kafka.batches import next_batch
from shared.kafka.config import admin_config, consumer_config, producer_config
from shared.kafka.delivery_tracker import DeliveryTracker, OutputPartition
from shared.kafka.leaders import leaderless, leaders_by_topic, offline_in
from shared.kafka.parking import Parking, foreseen
from shared.kafka.static_membership import (
    ConsumerFenced,
    is_fatal,
    leave,
    static_member_settings,
)
from shared.lineage import lineage_headers, source_of
from shared.metrics import instance_id
from shared.settings import Settings
from shared.tracing import trace_headers
from shared.tracing.stats import add_tracing_gauges

if TYPE_CHECKING:
    from shared.tracing.record_spans import OpenSpan

log = logging.getLogger(__name__)

#: What a commit waits beyond the producers' delivery timeout (a last request's answer).
DELIVERY_MARGIN_S = 15.0


class Runner:
    """One detector instance: its consumer, producer, tasks (state) and counters."""

    def __init__(
        self, settings: Settings, config: RuntimeConfig, status: StatusFile | None = None
    ) -> None:
        self.settings = settings
        self.config = config
        self.counters = Counters()
        self.membership = Membership()
        self._status = status
        self.restores: list[RestoreStats] = []
        #: Seconds spent restoring state, over every assignment so far.
        self.restore_seconds = 0.0
        self._stop = False
        detector = config.detector
        self._detector = detector
        self._topic_types = config.topics.input_types
        self._decoders = {
            topic: AvroDeserializer(INPUT_TYPES[record_type])
            for topic, record_type in self._topic_types.items()
        }
        self._decode_fns = {topic: d.decode for topic, d in self._decoders.items()}
        self._encode_alert = AvroSerializer("alert").encode
        self._tasks: dict[int, Task] = {}
        self._retry = RetryPolicy(config.retries, config.retry_backoff_s)
        self._policy = ErrorPolicy(
            config.error_rate_threshold, config.error_window, config.error_action
        )
        self._tracker = DeliveryTracker()
        self._parking = Parking()
        #: input partitions to hold back at the next commit because a co-partitioned output
        #: partition has no leader, though none of their output has failed yet
        self._foreseen: dict[int, set[OutputPartition]] = {}
        self._start_ms = config.manifest.start_ms
        client_settings = consumer_config(
            settings,
            config.group_id,
            **{
                "client.id": config.instance_id,
                "auto.offset.reset": auto_offset_reset(config.manifest),
                "max.poll.interval.ms": config.max_poll_interval_ms,
                **static_member_settings(
                    "detector", config.instance_id if config.static_member else None
                ),
                # Co-partitioned inputs must be assigned together (partition p of each to
                # one instance); the range assignor guarantees that, sticky does not.
                "partition.assignment.strategy": (
                    "range"
                    if detector.stateful and len(detector.inputs) > 1
                    else "cooperative-sticky"
                ),
                **config.extra_consumer_config,
            },
        )
        # librdkafka statistics, one small JSON document a second: the status file's
        # `rebalances` and the `consumer.lag` gauge.
        client_settings = {
            "statistics.interval.ms": 1000,
            **client_settings,
            "stats_cb": self._on_stats,
        }
        self._cooperative = is_cooperative(client_settings)
        self._client_settings = client_settings
        self._consumer = Consumer(client_settings)
        self._committer = OffsetCommitter(self._consumer)
        # Alerts and dead letters go out at once; state changelogs and metric snapshots wait
        # for the commit that needs them acknowledged (a linger as long as the interval), so
        # they reach the broker in one request per partition per commit, not per batch.
        # A message that cannot reach its partition (no leader) fails after
        # ``delivery_timeout_s`` instead of librdkafka's 300 s, and then holds back only the input
        # partition it came from (:mod:`parking`).
        linger_ms = max(5, round(config.commit_interval_s * 1000))
        timeout_ms = round(config.delivery_timeout_s * 1000)
        self._producer = Producer(
            producer_config(
                settings,
                **{"client.id": config.instance_id, "message.timeout.ms": timeout_ms},
            )
        )
        self._state_producer = Producer(
            producer_config(
                settings,
                **{
                    "client.id": f"{config.instance_id}-state",
                    "linger.ms": linger_ms,
                    "message.timeout.ms": linger_ms + timeout_ms,
                    # Only failures call back; the commit's flush accounts for the rest.
                    "delivery.report.only.error": True,
                },
            )
        )
        #: How long a commit waits for its output: past every message's delivery timeout, so
        #: the wait ends with each message acknowledged or failed (never just unanswered).
        self._flush_wait_s = max(
            config.flush_timeout_s, (linger_ms + timeout_ms) / 1000 + DELIVERY_MARGIN_S
        )
        self._producers = (self._producer, self._state_producer)
        self._next_commit = time.monotonic() + config.commit_interval_s
        #: The partitions being restored right now (read by the readiness gauge's thread).
        self._restoring: dict[int, RestoreStats] = {}
        self._inputs = InputWatch(
            InputIdentity(AdminClient(admin_config(settings, log_level=2)), self._topic_types),
            self._consumer, self._committer, status,
        )  # fmt: skip
        self.metrics = RuntimeMetrics(
            settings,
            detector.name,
            config.instance_id,
            (
                self._state_producer
                if metrics_topic_exists(self._state_producer, config.topics.metrics)
                else None
            ),
            config.topics.metrics,
            state_size=self._state_size,
            restore_progress=self._restore_progress,
        )
        self.tracing = RecordTracing(
            settings,
            f"detector.{detector.name}",
            instance_id(config.instance_id),
            detector.version,
            config.group_id,
            enabled=config.manifest.tracing,
        )
        if self.tracing.spans is not None:
            add_tracing_gauges(self.metrics.registry, self.tracing.tracing.stats)
        self._last_log = time.monotonic()

    # lifecycle ------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to finish its batch, commit and leave (SIGTERM calls this)."""
        self._stop = True

    def run(
        self,
        max_batches: int | None = None,
        stop_when: Callable[[Counters], bool] | None = None,
    ) -> None:
        """Process until stopped (or ``max_batches`` / ``stop_when``, for tests and benchmarks);
        leaves the group cleanly on the way out."""
        topics = list(self._topic_types)
        self._subscribe(topics)
        log.info(
            "instance %s of %s %s: group %s, inputs %s, start %s where nothing is committed",
            self.config.instance_id,
            self._detector.name,
            self._detector.version,
            self.config.group_id,
            ", ".join(topics),
            self.config.manifest.start_position,
        )
        status = self._status
        if status is not None:
            status.write(self.progress(), RUNNING)
        self.metrics.start()
        batches = 0
        completed = False
        try:
            while not self._stop and (max_batches is None or batches < max_batches):
                try:
                    messages = self._next_batch()
                    if self._parking.to_pause:
                        self._pause_parked()
                    self._committer.retry_owned()
                    if messages:
                        self.process_batch(messages)
                        batches += 1
                        if stop_when is not None and stop_when(self.counters):
                            break
                    else:
                        self._commit_if_due()  # the last records before a pause
                except (KafkaException, ConsumerFenced) as error:
                    if not (self.config.static_member and is_fatal(error)):
                        raise
                    self._join_again(topics, error)
                self._maybe_log()
                if self._parking.due(also_waiting=bool(self.metrics.held)):
                    self._take_back_parked()
                if self._inputs.due():
                    self._inputs.check()
                if status is not None and status.due():
                    status.write(self.progress())
            completed = True
        finally:
            # Not `except BaseException`: a failing assign inside a rebalance callback reaches
            # here as a KafkaError, which confluent-kafka raises although it is no exception.
            self._finish(None if completed else sys.exc_info()[1])

    def _subscribe(self, topics: list[str]) -> None:
        self._consumer.subscribe(
            topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    def _join_again(self, topics: list[str], error: object) -> None:
        """A static member fenced by its own return: the broker was away for longer than the
        session timeout, librdkafka joined again under a new member id, and a request that
        still carried the old one was refused (FENCED_INSTANCE_ID, which librdkafka makes fatal:
        librdkafka #3437). The consumer can do nothing more and its partitions are gone (lost);
        a new one with the same settings and name joins as the old one did, so the instance
        resumes by itself, from the group's commits, as a dynamic member does after an outage."""
        log.warning("consumer fenced after the group lost track of it (%s): joining again", error)
        old = self._consumer
        with contextlib.suppress(KafkaException, RuntimeError):
            lost = old.assignment()
            if lost:
                self._on_lost(old, lost)
        with contextlib.suppress(KafkaException, RuntimeError):
            old.close()
        self._consumer = Consumer(self._client_settings)
        self._committer = OffsetCommitter(self._consumer)
        self._inputs.use(self._consumer, self._committer)
        self._subscribe(topics)

    def _next_batch(self) -> list[Any]:
        """The records to process next (:func:`shared.kafka.batches.next_batch`): under load
        batches stay large, so the per-batch commit keeps its cost per record small; a lone record
        waits for nobody. ``batch_wait_s`` > 0 (a manifest's ``batch_wait_ms``) waits that long to
        fill a batch, trading latency for bigger batches at low rates."""
        config = self.config
        return next_batch(self._consumer, config.batch_size, config.idle_wait_s,
                          config.batch_wait_s)  # fmt: skip

    def _finish(self, error: object) -> None:
        """Leave the group, then record how the instance ended (``failed`` if either failed).

        A static member leaves only when it stops cleanly: one that failed is restarted by its
        supervisor under the same name and takes its partitions back without a rebalance."""
        try:
            self._close()
            if error is None:
                leave(self._client_settings)
        except BaseException as exc:
            error = error if error is not None else exc
            raise
        finally:
            if self._status is not None:
                self._status.finish(self.progress(), error)

    def _close(self) -> None:
        log.info("leaving the group: %s", self.counters.summary())
        try:
            self._commit_staged()
            self.metrics.close()
            self.tracing.close()
            for producer in self._producers:
                producer.flush(self.config.flush_timeout_s)
            self._committer.settle(timeout=10.0)
            self._hand_back(timeout=10.0)
        finally:
            self._consumer.close()

    def _hand_back(self, timeout: float) -> None:
        """Leave the group before closing: unsubscribe, and poll until the revoke callback has
        run and nothing is assigned. Closing a cooperative consumer while a rebalance is still
        handing it partitions (an incremental assign of nothing, then a revoke) has hung
        ``close()`` here for over a minute after a SIGTERM (chaos case 3 in ``make test``,
        2026-11-27); librdkafka's maintainers give this order as the way around it
        (librdkafka #4527). Records fetched meanwhile are not processed, so not committed."""
        try:
            self._consumer.unsubscribe()
        except Exception as exc:  # a consumer already failed: close() does what it can
            log.warning("could not leave the group before closing: %s", exc)
            return
        deadline = time.monotonic() + timeout
        while self._assigned_names() and time.monotonic() < deadline:
            self._consumer.poll(0.1)

    def progress(self) -> Progress:
        """The status file's numbers, from counters kept anyway (nothing per record)."""
        counters, membership = self.counters, self.membership
        return Progress(
            records=counters.records,
            alerts=counters.alerts,
            dead_letters=sum(counters.dead_letters.values()),
            failed_records=counters.failed_records,
            replayed=counters.replayed,
            error_rate=self._policy.rate,
            assigned=self._assigned_names(),
            assignments=membership.assignments,
            revocations=membership.revocations,
            rebalances=membership.rebalances,
            uncommitted_batches=self._committer.abandoned,
            waiting=self._parking.describe(self._topic_types),
        )

    def _assigned_names(self) -> tuple[str, ...]:
        """What the consumer owns now, ``topic[p]``; nothing once it has left the group."""
        try:
            owned = self._consumer.assignment()
        except RuntimeError:  # closed
            return ()
        return tuple(f"{tp.topic}[{tp.partition}]" for tp in sorted(owned, key=_key))

    # the batch ------------------------------------------------------------------------------
    def process_batch(self, messages: list[Any]) -> None:
        """Detect over one batch and produce its output; its offsets are staged and committed
        with the next commit (every ``commit_interval_s``), once that output is acknowledged."""
        started = time.monotonic()
        if self.counters.first_batch_at is None:
            self.counters.first_batch_at = time.perf_counter()
        budget = self.config.max_batch_s
        counters, policy = self.counters, self._policy
        decoders, types, tasks = self._decode_fns, self._topic_types, self._tasks
        stateful = self._detector.stateful
        timer = self.metrics.processing
        event_times: list[int] = []  # into the delay histogram once per batch
        durations: list[int] = []  # and the detect times into the timer, once per batch
        clock_ns = time.perf_counter_ns
        tracing = self.tracing
        now_ms = time.time() * 1000.0
        next_offsets: dict[tuple[str, int], int] = {}
        touched: set[Task] = set()
        handed_back: dict[tuple[str, int], int] = {}
        parked = self._parking.waiting  # usually empty: one falsy test a record
        succeeded = processed = 0
        for index, message in enumerate(messages):
            err = message.error()
            if err is not None:
                if err.fatal() or err.code() == KafkaError._FATAL:
                    raise ConsumerFenced(f"fatal consumer error: {err}")
                log.warning("consumer error: %s", err)
                continue
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if parked and partition in parked:
                continue  # fetched before its pause; read again when it is taken back
            tp = (topic, partition)
            if handed_back:
                if tp in handed_back:
                    continue
                handed_back[tp] = offset
                continue
            if index % 16 == 0 and time.monotonic() - started > budget:
                handed_back[tp] = offset
                continue
            next_offsets[tp] = offset + 1
            processed += 1
            span = tracing.start(message) if tracing.spans is not None else None
            error: BaseException | None = None
            try:
                task = tasks.get(partition) or self._task(partition)
                if stateful:
                    touched.add(task)
                    source = source_of(message.headers())
                    if source is not None and task.state.replayed(topic, offset, source):
                        # routed again by a restarted ingest: counted already, not even decoded
                        counters.replayed += 1
                        succeeded += 1
                        continue
                try:
                    record = decoders[topic](message.value() or b"")
                except DecodeError as exc:
                    error = exc
                    self._dead_letter(message, DECODE, exc, 1)
                    policy.record(True)
                    continue
                began = clock_ns()
                outcome = task.process(types[topic], record, topic, offset)
                durations.append(clock_ns() - began)
                event_times.append(record["event_time"])
                if outcome is NOTHING_FOUND:  # most records: nothing more to do
                    succeeded += 1
                    continue
                if outcome.attempts > 1:
                    counters.retries += outcome.attempts - 1
                if outcome.error is not None:
                    error = outcome.error
                    self._dead_letter(message, DETECT, outcome.error, outcome.attempts)
                    policy.record(True)
                    continue
                succeeded += 1
                for alert in outcome.alerts:
                    self._produce_alert(message, alert, span)
            finally:
                if span is not None:
                    tracing.end(span, error)
        counters.records += processed
        policy.record_ok(succeeded)
        for tp, offset in handed_back.items():
            self._seek(tp, offset)
        for task in touched:
            task.state.expire()
            changes = task.state.drain()
            if changes:
                counters.changelog += write_changes(
                    self._state_producer,
                    self.config.topics.changelog,
                    task.partition,
                    changes,
                    self._tracker,
                )
        timer.update_many_ns(durations)
        self.metrics.delay.update_many([now_ms - t for t in event_times])
        self.metrics.after_batch(counters)
        self._committer.stage(next_offsets, processed)
        counters.batches += 1
        self._commit_if_due()
        policy.check()

    def _commit_if_due(self) -> None:
        """Commit every ``commit_interval_s``, and as soon as a ``batch_size`` of records is
        staged: so a kill replays fewer than two batches' records however fast the instance
        reads (a backlog comes in full batches, each one committed, as before the interval)."""
        committer = self._committer
        if committer.has_staged and (
            committer.staged_records >= self.config.batch_size
            or time.monotonic() >= self._next_commit
        ):
            self._commit_staged()

    def _commit_staged(self) -> None:
        """Commit the offsets of every record processed since the last commit, once their
        output (alerts, dead letters, state changes) and their counts are acknowledged."""
        self._next_commit = time.monotonic() + self.config.commit_interval_s
        if not self._committer.has_staged:
            return
        self.metrics.before_commit()
        unreached = self._tracker.wait(
            self._producers, self._flush_wait_s, self._purge_if_leaderless
        )
        for number, outputs in self._foreseen.items():
            unreached.setdefault(number, set()).update(outputs)
        self._foreseen = {}
        staged = self._committer.take_staged()
        if unreached:
            staged = self._park(unreached, staged)
        self._commit(staged)

    def _task(self, partition: int) -> Task:
        task = self._tasks.get(partition)
        if task is None:
            if self._detector.stateful:  # normally restored on assignment; never start empty
                self._restore([partition])
                return self._tasks[partition]
            task = self._tasks[partition] = Task(self._detector, partition, retry=self._retry)
        return task

    def _produce_alert(self, message: Any, alert: dict[str, Any], span: OpenSpan | None) -> None:
        try:
            value = self._encode_alert(alert)
        except EncodeError as exc:
            self._dead_letter(message, ENCODE_ALERT, exc, 1)
            return
        topic, key = self.config.topics.alerts, alert["customer_id"].encode()
        headers, publish = self.tracing.alert_headers(message, span, topic, key)
        headers.extend(lineage_headers(message.headers()))  # the raw record it stems from
        self._send(topic, value, key, headers, message.partition())
        if publish is not None:
            self.tracing.end(publish)
        self.counters.alerts += 1

    def _dead_letter(self, message: Any, stage: str, exc: BaseException, attempts: int) -> None:
        headers = dead_letter_headers(
            stage=stage,
            exc=exc,
            topic=message.topic(),
            partition=message.partition(),
            offset=message.offset(),
            instance_id=self.config.instance_id,
            detector=self._detector.name,
            attempts=attempts,
            carried=trace_headers(message.headers()),
        )
        self._send(
            self.config.topics.dlq, message.value(), message.key(), headers, message.partition()
        )
        self.counters.dead_letter(stage)
        log.warning(
            "dead-lettered %s[%d]@%d at %s: %s: %s",
            message.topic(),
            message.partition(),
            message.offset(),
            stage,
            type(exc).__name__,
            str(exc)[:200],
        )

    def _send(self, topic: str, value: Any, key: Any, headers: Any, source: int) -> None:
        """Produce an alert or dead letter for a record of input partition ``source``."""
        delivered = self._tracker.for_input(source)
        while True:
            try:
                self._producer.produce(topic, value, key, headers=headers, on_delivery=delivered)
                break
            except BufferError:
                self._producer.poll(0.05)
        self._tracker.sent()

    def _commit(self, next_offsets: dict[tuple[str, int], int]) -> None:
        self._committer.commit(next_offsets)

    def _seek(self, tp: tuple[str, int], offset: int) -> None:
        self.counters.handed_back += 1
        log.warning(
            "batch over %.0f s: handing %s[%d]@%d back", self.config.max_batch_s, *tp, offset
        )
        self._consumer.seek(TopicPartition(tp[0], tp[1], offset))

    # rebalances -----------------------------------------------------------------------------
    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        log.info("assigned %s", _names(partitions))
        self._inputs.on_assign(partitions)  # a re-created input starts over
        if self._start_ms is not None:
            assign_from_time(consumer, partitions, self._start_ms, self._cooperative)
        if self._detector.stateful:
            numbers = sorted({p.partition for p in partitions} - set(self._tasks))
            self._restore(self._restorable(numbers))
        self.membership.on_assign(partitions)
        if self._status is not None and partitions:
            # Written right after this consume() returns, once the assignment has taken effect.
            self._status.expedite()

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        log.info("revoked %s", _names(partitions))
        self._commit_staged()  # the next owner starts after the last record processed here
        self._committer.on_revoke(partitions)
        self._forget(consumer, partitions)

    def _on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        log.warning("lost %s (evicted from the group)", _names(partitions))
        self._committer.on_lost(partitions)
        self._forget(consumer, partitions)

    def _forget(self, consumer: Any, partitions: list[Any]) -> None:
        """Drop the tasks (state) of partitions that are no longer ours."""
        self.membership.on_revoke(partitions)
        remaining = {p.partition for p in consumer.assignment()} - {p.partition for p in partitions}
        gone = {p.partition for p in partitions} - remaining
        for number in gone:
            self._tasks.pop(number, None)
        self._parking.forget(gone)

    def _restore(self, numbers: list[int]) -> None:
        """Rebuild the state of newly assigned partitions ``numbers`` from the changelog, all
        of them in one read, before the runner takes them on."""
        if not numbers:
            return
        tasks = {number: Task(self._detector, number, retry=self._retry) for number in numbers}
        self._restoring = stats = {number: RestoreStats(number) for number in numbers}
        started = time.monotonic()
        states = {number: task.state for number, task in tasks.items()}
        restore_partitions(self._consumer, self.settings, self.config, states, stats)
        self.restore_seconds += time.monotonic() - started
        self._restoring = {}
        self.restores.extend(stats.values())
        self.counters.restored += sum(s.applied for s in stats.values())
        self._tasks.update(tasks)

    # partitions waiting for an output leader (parking.py) ------------------------------------
    def _park(
        self, unreached: dict[int, set[OutputPartition]], staged: dict[tuple[str, int], int]
    ) -> dict[tuple[str, int], int]:
        """Hold back the input partitions whose output could not be delivered; returns the
        staged offsets that may still be committed (the others')."""
        for number in self._parking.park(unreached):
            self._tasks.pop(number, None)  # taken back as after a restart: restored, replayed
            log.warning(
                "partition %d waits for %s (no leader); its records since the last commit are "
                "processed again once it has one",
                number,
                ", ".join(f"{t}[{p}]" for t, p in sorted(unreached[number])),
            )
        self._pause_parked()
        if self._status is not None:
            self._status.expedite()
        return {tp: offset for tp, offset in staged.items() if tp[1] not in unreached}

    def _purge_if_leaderless(self) -> None:
        """A commit's output is slow to be acknowledged: if an output topic has a partition
        without a leader, fail every message still queued now rather than let every partition
        wait out the delivery timeout (delivery_tracker.py's docstring); and hold back with
        the others every assigned partition whose alerts or changelog partition (the same
        number) is lost, before an output of theirs meets it and costs every partition this
        wait again (parking.foreseen)."""
        topics = self.config.topics
        outputs = [topics.alerts, topics.dlq, topics.changelog, topics.metrics]
        found = leaders_by_topic(self._producer) or {}
        lost = offline_in(found, outputs)
        if not lost:
            return
        by_number = [topics.changelog] if self._detector.stateful else []
        inputs = {len(found.get(topic, {})) for topic in topics.inputs.values()}
        if inputs == {len(found.get(topics.alerts, {}))}:  # alerts co-partitioned with the inputs
            by_number.append(topics.alerts)
        numbers = {tp.partition for tp in self._own_all()}
        self._foreseen = foreseen(lost, numbers, by_number)
        log.warning(
            "output partition(s) without a leader: %s; failing what is queued, to hold back only "
            "the input partitions that need them",
            ", ".join(f"{t}[{p}]" for t, p in sorted(lost)),
        )
        for producer in self._producers:
            producer.purge(in_queue=True, in_flight=False, blocking=True)

    def _own(self, numbers: set[int]) -> list[Any]:
        """The assigned input partitions with these numbers."""
        return [tp for tp in self._own_all() if tp.partition in numbers]

    def _own_all(self) -> list[Any]:
        try:
            return list(self._consumer.assignment())
        except (KafkaException, RuntimeError):
            return []

    def _pause_parked(self) -> None:
        """Pause the parked partitions not paused yet: at once when parked, and after the next
        ``consume()`` those parked in a rebalance callback before their assignment took effect
        (their records fetched meanwhile are skipped)."""
        owned = self._own(self._parking.to_pause)
        if owned:
            self._consumer.pause(owned)
        self._parking.to_pause -= {tp.partition for tp in owned}

    def _restorable(self, numbers: list[int]) -> list[int]:
        """Of newly assigned stateful partitions, those whose changelog partition has a leader
        (its restore reads it); the others are parked until it has one."""
        return self._parking.restorable(self._producer, self.config.topics.changelog, numbers)

    def _take_back_parked(self) -> None:
        """Take back the parked partitions whose outputs have a leader again: restore their
        state, rewind them to their committed offsets, resume them."""
        metrics, changelog = self.config.topics.metrics, self.config.topics.changelog
        held = {(metrics, p) for p in self.metrics.held}
        # A stateful partition is restored from its changelog partition: that needs a leader too.
        restored_from = {(changelog, n) for n in self._parking.waiting if self._detector.stateful}
        lost = leaderless(self._producer, self._parking.awaited() | held | restored_from)
        self.metrics.release({p for _, p in held - lost})
        ready = [n for n in self._parking.ready(lost) if (changelog, n) not in lost]
        owned = self._own(set(ready))
        try:
            if owned and self._detector.stateful:
                self._restore(sorted({tp.partition for tp in owned}))
            points = self._rewind_points(owned) if owned else []
        except KafkaException as exc:  # the cluster moved again meanwhile: the next look retries
            log.warning("could not take back %s yet: %s", _names(owned), exc)
            for tp in owned:
                self._tasks.pop(tp.partition, None)
            return
        self._parking.forget(ready)
        if not owned:
            return
        for tp in points:
            self._consumer.seek(tp)
        self._consumer.resume(owned)
        log.info("taken back: %s (its outputs have leaders again)", _names(owned))
        if self._status is not None:
            self._status.expedite()

    def _rewind_points(self, owned: list[Any]) -> list[Any]:
        """Where each partition starts again: after its last acknowledged records (an offset
        kept for a later commit, else the group's committed offset), or where a partition with
        nothing committed starts."""
        kept = self._committer.pending
        committed = self._consumer.committed(
            [TopicPartition(tp.topic, tp.partition) for tp in owned], timeout=10
        )
        points = {(tp.topic, tp.partition): kept.get((tp.topic, tp.partition), tp.offset)
                  for tp in committed}  # fmt: skip
        fresh = [TopicPartition(t, p) for (t, p), offset in points.items() if offset < 0]
        if fresh and self._start_ms is not None:  # where the manifest's time starts them
            points |= offsets_at_time(self._consumer, fresh, self._start_ms, 10)
        elif fresh:  # where the reset policy starts them, as on their first assignment
            reset = auto_offset_reset(self.config.manifest)
            start = OFFSET_END if reset == "latest" else OFFSET_BEGINNING
            points |= {(tp.topic, tp.partition): start for tp in fresh}
        return [TopicPartition(t, p, offset) for (t, p), offset in points.items()]

    # gauges (read by the metrics reporter's thread) ------------------------------------------
    def _state_size(self) -> int:
        return sum(
            len(store)
            for task in list(self._tasks.values())
            for store in task.state.stores.values()
        )

    def _restore_progress(self) -> float:
        """Share of changelog updates read, over every restore so far (1.0: nothing pending)."""
        restores = [*self.restores, *list(self._restoring.values())]
        total = sum(r.total for r in restores)
        return 1.0 if total == 0 else sum(r.covered for r in restores) / total

    def _on_stats(self, stats_json: str) -> None:
        stats = parse_stats(stats_json)
        self.membership.on_stats(stats)
        self.metrics.on_stats(stats)

    def _maybe_log(self) -> None:
        now = time.monotonic()
        if now - self._last_log >= self.config.log_interval_s:
            self._last_log = now
            log.info("%s", self.counters.summary())


def _key(tp: Any) -> tuple[str, int]:
    return (tp.topic, tp.partition)


def _names(partitions: list[Any]) -> str:
    return ", ".join(f"{p.topic}[{p.partition}]" for p in partitions) or "nothing"
