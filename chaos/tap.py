"""A reader of the alerts topic that keeps up while a case runs, so a case can ask at any moment
what has come out (recovery is "everything acknowledged before the fault is out")."""

from __future__ import annotations

import threading
from typing import Any

from shared.avro import AvroDeserializer
from shared.settings import Settings


class AlertTap:
    def __init__(self, settings: Settings, topic: str) -> None:
        self.settings, self.topic = settings, topic
        #: (partition, offset, source record id) of every alert read, in arrival order
        self.alerts: list[tuple[int, int, str]] = []
        self.seen: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="alert-tap", daemon=True)

    def start(self) -> AlertTap:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def has_all(self, ids: set[str]) -> bool:
        with self._lock:
            return ids <= self.seen

    def in_partition_order(self) -> list[tuple[int, str]]:
        with self._lock:
            return [(p, ident) for p, _, ident in sorted(self.alerts)]

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        decode = AvroDeserializer("alert").decode
        consumer = Consumer({"bootstrap.servers": self.settings.bootstrap_servers,
                             "group.id": "chaos-tap", "enable.auto.commit": False,
                             "log_level": 2})  # fmt: skip
        try:
            partitions = consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
            while not self._stop.is_set():
                batch: list[Any] = consumer.consume(2000, timeout=0.2)
                found = []
                for message in batch:
                    if message.error() is None:
                        ident = str(decode(message.value())["source_record_id"])
                        found.append((message.partition(), message.offset(), ident))
                with self._lock:
                    self.alerts.extend(found)
                    self.seen.update(ident for _, _, ident in found)
        finally:
            consumer.close()
