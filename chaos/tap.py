"""Readers of a case's output topics that keep up while the case runs, so a case can ask at any
moment what has come out (recovery is "everything acknowledged before the fault is out").

:class:`AlertTap` reads the alerts (the record id is the alert's ``source_record_id``);
:class:`DeadLetterTap` reads a dead-letter topic (the record id is in the original bytes: a
transaction's, or the one a poison pill carries) and keeps each dead letter's headers, which the
error cases check.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from chaos.smoke import poison_id
from shared.avro import AvroDeserializer
from shared.kafka.config import consumer_config
from shared.settings import Settings


class AlertTap:
    def __init__(self, settings: Settings, topic: str) -> None:
        self.settings, self.topic = settings, topic
        #: (partition, offset, source record id) of every message read, in arrival order
        self.alerts: list[tuple[int, int, str]] = []
        self.seen: set[str] = set()
        #: when the first message came (time.monotonic()), None before
        self.first_at: float | None = None
        self._decode = AvroDeserializer("alert").decode
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tap-{topic}", daemon=True)

    def start(self) -> AlertTap:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def has_all(self, ids: set[str]) -> bool:
        with self._lock:
            return ids <= self.seen

    def count(self) -> int:
        with self._lock:
            return len(self.alerts)

    def wait_for(self, ids: set[str], since: float, timeout_s: float = 120.0) -> float | None:
        """Seconds from ``since`` (time.monotonic()) until every one of ``ids`` has come out, or
        None if they had not after ``timeout_s``."""
        deadline = since + timeout_s
        while time.monotonic() < deadline:
            if self.has_all(ids):
                return time.monotonic() - since
            time.sleep(0.1)
        return None

    def in_partition_order(self) -> list[tuple[int, str]]:
        with self._lock:
            return [(p, ident) for p, _, ident in sorted(self.alerts)]

    def _ident(self, message: Any) -> str | None:
        return str(self._decode(message.value())["source_record_id"])

    def _keep(self, message: Any) -> None:
        """Anything else a subclass keeps of a message (called on the tap's thread)."""

    def _run(self) -> None:

        # Assigned, never subscribed: the group id is only librdkafka's requirement.
        consumer = Consumer(consumer_config(self.settings, "chaos-tap", log_level=2))
        try:
            partitions = consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
            while not self._stop.is_set():
                batch: list[Any] = consumer.consume(2000, timeout=0.2)
                found = []
                for message in batch:
                    if message.error() is None:
                        ident = self._ident(message)
                        self._keep(message)
                        if ident is not None:
                            found.append((message.partition(), message.offset(), ident))
                with self._lock:
                    if found and self.first_at is None:
                        self.first_at = time.monotonic()
                    self.alerts.extend(found)
                    self.seen.update(ident for _, _, ident in found)
        finally:
            consumer.close()


class DeadLetterTap(AlertTap):
    """A dead-letter topic's messages: the record id from the original bytes (a transaction), and
    every dead letter's headers as a dict (``headers``), undecodable originals included."""

    def __init__(self, settings: Settings, topic: str) -> None:
        super().__init__(settings, topic)
        #: (original bytes, headers) of every dead letter, in arrival order
        self.letters: list[tuple[bytes, dict[str, str]]] = []
        self._transaction = AvroDeserializer("transaction").decode

    def _ident(self, message: Any) -> str | None:
        value = message.value()
        pill = poison_id(value)
        if pill is not None:
            return pill
        try:
            return str(self._transaction(value)["record_id"])
        except Exception:  # neither a pill nor a transaction: some other service's dead letter
            return None

    def _keep(self, message: Any) -> None:
        headers = {k: (v or b"").decode(errors="replace") for k, v in message.headers() or []}
        with self._lock:
            self.letters.append((message.value(), headers))
