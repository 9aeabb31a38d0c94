"""The notifier's loop: alerts in, deliveries out, each alert notified once in effect.

One thread drives everything but the attempts themselves (those run in each channel's bounded
pool, :mod:`services.notifier.dispatch`). A round:

1. **take** the alerts the consumer has (the group ``notifier``, so instances share the
   partitions): decode (a bad one is dead-lettered with the reason), route by the rules, admit
   to the partition's book (a repeat of an alert id is suppressed there), write each new
   PENDING delivery to ``notifications`` and the book's changes to the changelog, and wait
   until the broker has them. From then on the book, not the consumer's position, drives the
   delivery: a slow channel never holds a partition back;
2. **offer** the deliveries that are due to their channels: a full channel says "busy" (it stays
   due), an open breaker "open" (postponed until the breaker lets a trial through, no attempt
   spent). Each attempt gets a span, the child of the alert's trace, and its context goes to the
   receiver in a ``traceparent`` header. Then the alerts taken are committed: after the offer,
   so a new alert's delivery does not wait for the commit's round trip (a crash in between
   replays alerts the restored book suppresses, their attempts sent again with their keys);
3. **record** the attempts that ended: DELIVERED, a retry after the channel's backoff, or FAILED
   after its last attempt (and a dead letter), each written to ``notifications`` and the
   changelog.

On a rebalance the revoked partitions' attempts in flight are waited for (a bounded time), their
outcomes written, and the books dropped; the new owner restores them from the changelog. Anything
the loop did not get to write is attempted again by whoever owns the partition next, with the same
idempotency key (the alert id).

A partition whose records cannot reach a leader (a one-replica topic on a cluster that lost a
broker) is held back alone and taken back when the leader returns (:mod:`holding`); the others
go on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context

from services.notifier.book import DELIVERED, FAILED, Delivery, DeliveryBook
from services.notifier.channels import next_attempt_in, open_channels
from services.notifier.config import NotifierConfig
from services.notifier.dispatch import OPEN, SENT
from services.notifier.figures import NotifierFigures
from services.notifier.holding import Holding
from services.notifier.outcome import Outcome
from services.notifier.outputs import NotifierOutputs
from services.notifier.records import webhook_body
from services.notifier.restore import restore_books
from services.notifier.rules import Routing
from shared.avro import AvroDeserializer, Catalogue, DecodeError
from shared.kafka.batches import next_batch
from shared.kafka.config import consumer_config
from shared.kafka.delivery_tracker import OutputPartition
from shared.kafka.static_membership import (
    ConsumerFenced,
    is_fatal,
    leave,
    static_member_settings,
)
from shared.lineage import SOURCE_TIMESTAMP_HTTP_HEADER, source_timestamp_ms
from shared.metrics import MetricRegistry
from shared.settings import Settings
from shared.tracing import Tracing, extract, inject, trace_headers

log = logging.getLogger(__name__)

#: Alerts taken per round at most.
BATCH = 500
#: How often finished deliveries older than the TTL are forgotten.
EXPIRE_EVERY_S = 60.0
#: The longest a revoke or a stop waits for the attempts in flight.
DRAIN_S = 10.0
#: The longest a round with attempts in flight waits for one of them to end (new alerts wait
#: at most this long to be taken while every channel is busy).
BUSY_WAIT_S = 0.05


@dataclass
class _Attempt:
    partition: int
    span: Span


class Notifier:
    def __init__(
        self,
        settings: Settings,
        config: NotifierConfig,
        routing: Routing,
        instance_id: str,
        catalogue: Catalogue,
        tracing: Tracing,
        registry: MetricRegistry,
        status_file: Path,
        *,
        static_member: bool = False,
    ) -> None:
        """``static_member``: ``instance_id`` outlives the process (``--instance-id``), so a
        restarted notifier takes its partitions back at once (shared/kafka/static_membership.py)."""
        self.settings, self.config, self.routing = settings, config, routing
        self.instance_id = instance_id
        self.names = config.names
        self.books: dict[int, DeliveryBook] = {}
        self.outputs = NotifierOutputs(settings, config, instance_id, catalogue)
        self.dispatcher = open_channels(routing, config, settings.home)
        self.figures = NotifierFigures(registry, status_file, self.pending)
        self._decode = AvroDeserializer("alert", catalogue=catalogue).decode
        self._tracer = tracing.tracer
        self._in_flight: dict[str, _Attempt] = {}
        self._rotation = 0
        self._expired_at = time.monotonic()
        self._client_settings = consumer_config(
            settings, self.names.notifier_group,
            **{"client.id": instance_id, "max.poll.interval.ms": 300_000,
               **static_member_settings("notifier", instance_id if static_member else None)},
        )  # fmt: skip
        self._consumer = Consumer(self._client_settings)
        self.holding = Holding(
            self._consumer, self.outputs.metadata, self.names.alerts,
            self.names.notifier_changelog, self._restore,
        )  # fmt: skip

    # ------------------------------------------------------------------ running
    def run(self, stopping: threading.Event) -> None:
        """Rounds until ``stopping`` is set; then the attempts in flight get DRAIN_S to end."""
        self._consumer.subscribe([self.names.alerts], on_assign=self._assigned,
                                 on_revoke=self._revoked, on_lost=self._revoked)  # fmt: skip
        stopped = False
        try:
            while not stopping.is_set():
                self.round()
            self._drain(self._in_flight.keys())
            self._write_changes(self.books)
            _unsettled(self.outputs.settle(), "at the stop")
            self.figures.write(self.instance_id, "stopped", force=True)
            stopped = True
        finally:
            self._consumer.close()  # the revoke callback writes what is left
            self.dispatcher.close(wait=False)
        if stopped:  # a static member leaves only when it stops cleanly (static_membership.py)
            leave(self._client_settings)

    def round(self) -> None:
        """One round. With attempts in flight it does not sit in the consumer: it takes what
        alerts are there and then waits for the next attempt to end (at most BUSY_WAIT_S), so
        a freed slot is filled at once rather than after a poll. Idle, it waits for the first
        alert only, never for a batch to fill (:mod:`shared.kafka.batches`)."""
        self._offer_due()  # first: a round never sits in the consumer while work is due
        busy = bool(self._in_flight)
        messages = next_batch(self._consumer, BATCH, 0.0 if busy else self.config.poll_s)
        if messages:
            ends = self._take(messages)
            self._offer_due()  # the book is written: deliveries need not wait for the commit
            self._commit(ends)
        self._record(self.dispatcher.finished(BUSY_WAIT_S if busy and not messages else 0.0))
        self._housekeeping()

    # ------------------------------------------------------------------ 1. take
    def _take(self, messages: list[Any]) -> dict[int, int]:
        """Admit ``messages`` into their books and write the new entries, acknowledged (or their
        partitions held back); the offsets to commit, which the caller does once it has offered
        the new deliveries: a crash in between replays alerts the restored book suppresses, as a
        crash before any commit does."""
        now = time.time()
        touched: set[int] = set()
        ends: dict[int, int] = {}
        for message in messages:
            if message.error() is not None:
                if is_fatal(message.error()):  # fenced: only a new process can join again
                    raise ConsumerFenced(f"the alerts consumer is unusable: {message.error()}")
                log.warning("alerts consumer: %s", message.error())
                continue
            partition = message.partition()
            ends[partition] = message.offset() + 1
            book = self.books.get(partition)
            if book is None:  # not ours any more (revoked within this consume)
                continue
            self.figures.alerts.mark()
            try:
                alert = self._decode(message.value())
            except DecodeError as error:
                self.figures.undecodable.inc()
                self.outputs.undecodable(message, error)
                continue
            _, channels = self.routing.route(alert)
            if not channels:
                self.figures.unrouted.inc()
                continue
            headers = message.headers() or []  # confluent-kafka builds this list on each call
            trace = {k: v.decode() for k, v in trace_headers(headers)}
            before = book.duplicates
            admitted = book.admit(alert, [c.name for c in channels], now, trace=trace or None,
                                  offset=message.offset(),
                                  source_ms=source_timestamp_ms(headers))  # fmt: skip
            if book.duplicates > before:
                self.figures.duplicates.inc(book.duplicates - before)
            for entry in admitted:
                self.outputs.notification(entry, alert, partition)
            touched.add(partition)
        self._write_changes({p: self.books[p] for p in touched if p in self.books})
        self._hold(self.outputs.settle())  # held partitions' alerts are not committed
        return ends

    def _commit(self, ends: dict[int, int]) -> None:
        mine = [TopicPartition(self.names.alerts, p, end) for p, end in ends.items()
                if p in self.books]  # fmt: skip
        if not mine:
            return
        try:
            self._consumer.commit(offsets=mine, asynchronous=False)
        except KafkaException as error:  # a rebalance took them: the new owner's book has them
            log.warning("commit of %s refused (%s): the alerts come again and are suppressed",
                        [tp.partition for tp in mine], error)  # fmt: skip

    # ------------------------------------------------------------------ 2. offer
    def _offer_due(self) -> None:
        """Fill each channel's free room with its due deliveries, a partition at a time from a
        rotating start (so no partition's backlog keeps the others waiting)."""
        now = time.time()
        partitions = list(self.books)
        if not partitions:
            return
        self._rotation = (self._rotation + 1) % len(partitions)
        order = partitions[self._rotation :] + partitions[: self._rotation]
        for channel in self.routing.channels:
            for partition in order:
                if not self.dispatcher.has_room(channel) or not self._offer_from(
                    partition, self.books[partition], channel, now
                ):
                    break

    def _offer_from(self, partition: int, book: DeliveryBook, channel: str, now: float) -> bool:
        """Offer ``channel``'s due deliveries of one book until the channel has no room; False
        when the channel refused one (full, or its breaker open): stop offering to it."""
        for entry in book.due_in(channel, now):
            if entry.key in self._in_flight:
                continue
            if not self.dispatcher.has_room(channel):
                return False
            if self._offer(partition, book, entry) != SENT:
                return False
        return True

    def _offer(self, partition: int, book: DeliveryBook, entry: Delivery) -> str:
        assert entry.alert is not None  # a PENDING entry carries its alert
        parent = extract(list((entry.trace or {}).items()))
        span = self._tracer.start_span(f"notify {entry.channel}", parent, SpanKind.CLIENT)
        headers = {k: v.decode() for k, v in inject(_context_of(span))}
        if entry.source_ms is not None:
            headers[SOURCE_TIMESTAMP_HTTP_HEADER] = str(entry.source_ms)
        verdict = self.dispatcher.offer(entry, webhook_body(entry.alert), headers)
        if verdict == SENT:
            if span.is_recording():
                span.set_attributes({"mesh.alert_id": entry.alert_id,
                                     "mesh.notifier.channel": entry.channel,
                                     "mesh.notifier.attempt": entry.attempts + 1})  # fmt: skip
            self._in_flight[entry.key] = _Attempt(partition, span)
        elif verdict == OPEN:  # no attempt spent: due again when the breaker lets a trial through
            breaker = self.dispatcher.breakers[entry.channel]
            book.postpone(entry, time.time() + max(breaker.reopens_at() - time.monotonic(), 0))
        return verdict

    # ------------------------------------------------------------------ 3. record
    def _record(self, ended: list[tuple[Delivery, Outcome]]) -> None:
        touched: dict[int, DeliveryBook] = {}
        for entry, outcome in ended:
            attempt = self._in_flight.pop(entry.key, None)
            if attempt is None:  # its partition was revoked while it ran: the new owner retries
                continue
            _end_span(attempt.span, outcome)
            self.figures.attempt(entry.channel, outcome.delivered, outcome.seconds)
            book = self.books.get(attempt.partition)
            if book is None:  # revoked meanwhile: the new owner attempts it again
                continue
            now = time.time()
            if outcome.delivered:
                done = book.attempted(entry, now, delivered=True)
            else:
                channel = self.routing.channels[entry.channel]
                retry = next_attempt_in(channel, entry.attempts + 1, outcome)
                done = book.attempted(entry, now, delivered=False, error=outcome.error,
                                      retry_in_s=retry)  # fmt: skip
            assert entry.alert is not None
            self.outputs.notification(done, entry.alert, attempt.partition)
            if done.status in (DELIVERED, FAILED):
                self.figures.finished(done)
            if done.status == FAILED:
                self.outputs.failed(done, entry.alert, attempt.partition)
            touched[attempt.partition] = book
        self._write_changes(touched)

    # ------------------------------------------------------------------ upkeep
    def _housekeeping(self) -> None:
        self._hold(self.outputs.poll())
        self.holding.pause_new()
        taken_back = self.holding.take_back()
        if taken_back:
            self.books.update(taken_back)
            self._show_partitions()
        if time.monotonic() - self._expired_at >= EXPIRE_EVERY_S:
            self._expired_at = time.monotonic()
            now = time.time()
            for book in self.books.values():
                book.expire(now)
            self._write_changes(self.books)
        self.figures.breakers = {n: b.state for n, b in self.dispatcher.breakers.items()}
        self.figures.write(self.instance_id, "running")

    def _write_changes(self, books: dict[int, DeliveryBook]) -> None:
        for partition, book in books.items():
            changes = book.changes()
            if changes:
                self.outputs.changes(partition, changes)

    def _drain(self, keys: Iterable[str]) -> None:
        """Wait (DRAIN_S at most) for the attempts of ``keys`` in flight and record them."""
        waiting = set(keys)
        deadline = time.monotonic() + DRAIN_S
        while waiting & self._in_flight.keys() and time.monotonic() < deadline:
            self._record(self.dispatcher.finished(BUSY_WAIT_S))
        left = waiting & self._in_flight.keys()
        if left:
            log.warning("%d attempt(s) still in flight after %.0f s: whoever owns their "
                        "partition next sends them again (same idempotency key)", len(left),
                        DRAIN_S)  # fmt: skip

    # ------------------------------------------------------------------ rebalances
    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        numbers = [tp.partition for tp in partitions if tp.partition not in self.books]
        self.books.update(self._restore(self.holding.restorable(numbers)))
        self._show_partitions()
        log.info("%s took alerts partitions %s", self.instance_id, numbers)

    def _restore(self, numbers: list[int]) -> dict[int, DeliveryBook]:
        return restore_books(self.settings, self.config, numbers, self.instance_id)

    # ------------------------------------------------------------------ held back (holding.py)
    def _hold(self, unreached: dict[int, set[OutputPartition]]) -> None:
        """Hold back the partitions of ours whose records found no leader: their books go, and
        their attempts in flight with them (a restored book has them PENDING again)."""
        mine = {number: outputs for number, outputs in unreached.items() if number in self.books}
        if not mine:
            return
        for number in self.holding.hold(mine):
            self.books.pop(number, None)
        held = set(self.holding.parking.waiting)
        for key in [k for k, a in self._in_flight.items() if a.partition in held]:
            self._in_flight.pop(key).span.end()
        self._show_partitions()

    def _show_partitions(self) -> None:
        self.figures.partitions = sorted(self.books)
        self.figures.waiting = self.holding.describe()
        self.figures.write(self.instance_id, "running", force=True)

    def _revoked(self, consumer: Any, partitions: list[Any]) -> None:
        numbers = {tp.partition for tp in partitions}
        self._drain(k for k, a in self._in_flight.items() if a.partition in numbers)
        self._write_changes({p: self.books[p] for p in numbers if p in self.books})
        unreached: dict[int, set[OutputPartition]] = {}
        try:
            unreached = self.outputs.settle()
        except RuntimeError as error:  # the next owner attempts again what was not written
            log.error("%s", error)
        _unsettled({n: o for n, o in unreached.items() if n in numbers}, "at a revoke")
        for number in numbers:
            self.books.pop(number, None)
        for key in [k for k, a in self._in_flight.items() if a.partition in numbers]:
            self._in_flight.pop(key).span.end()
        self.holding.forget(numbers)
        self._hold({n: o for n, o in unreached.items() if n not in numbers})  # still ours
        self.figures.partitions = sorted(self.books)
        self.figures.waiting = self.holding.describe()
        log.info("%s gave up alerts partitions %s", self.instance_id, sorted(numbers))

    def pending(self) -> int:
        return sum(book.pending for book in list(self.books.values()))


def _unsettled(unreached: dict[int, set[OutputPartition]], when: str) -> None:
    """Records that found no leader when nothing is left to hold back (a stop, a revoke): whoever
    owns their partitions next restores the book without them and attempts again."""
    for number, outputs in sorted(unreached.items()):
        log.warning("%s, records of alerts partition %d found no leader (%s): its next owner "
                    "takes them again", when, number,
                    ", ".join(f"{t}[{p}]" for t, p in sorted(outputs)))  # fmt: skip


def _context_of(span: Span) -> Any:
    return set_span_in_context(span)


def _end_span(span: Span, outcome: Outcome) -> None:
    if span.is_recording():
        if outcome.status is not None:
            span.set_attribute("http.response.status_code", outcome.status)
        if not outcome.delivered:
            span.set_status(Status(StatusCode.ERROR, outcome.error or "failed"))
    span.end()
