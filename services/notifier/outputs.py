"""Everything the notifier writes to Kafka, through one idempotent producer.

* ``notifications``: a Notification (Avro) at every change of a delivery (admitted as PENDING,
  after each attempt, DELIVERED or FAILED), key = alert id;
* ``notifier.changelog``: the delivery book's changes, to the partition number of the ``alerts``
  partition they belong to (the book moves with it), key ``<alert_id>/<channel>``;
* ``notifications.dlq``: an alert that does not decode (its original bytes, the reason in the
  ``mesh.error.*`` headers), and a delivery that FAILED (the alert as the channel would have got
  it, its channel and last error).

:meth:`NotifierOutputs.settle` waits until the broker has every record so far, which is what lets
the loop commit the alerts it consumed: a committed alert is always in the changelog.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Producer

from services.notifier.book import FAILED, Delivery
from services.notifier.config import NotifierConfig
from services.notifier.records import notification_value, webhook_body
from shared.avro import AvroSerializer, Catalogue
from shared.dead_letters import DECODE, DELIVER, dead_letter_headers
from shared.kafka.config import producer_config
from shared.settings import Settings
from shared.tracing import trace_headers

log = logging.getLogger(__name__)

#: The channel a dead-lettered delivery was meant for.
CHANNEL_HEADER = "mesh.notifier.channel"


class DeliveryFailed(Exception):
    """A delivery that used its last attempt (only ever raised into a dead letter's headers)."""


class OutputError(RuntimeError):
    """The broker did not take what the notifier wrote: nothing may be committed."""


class NotifierOutputs:
    def __init__(
        self, settings: Settings, config: NotifierConfig, instance_id: str, catalogue: Catalogue
    ) -> None:
        self.names = config.names
        self.instance_id = instance_id
        self._encode = AvroSerializer("notification", catalogue=catalogue).encode
        self._producer = Producer(
            producer_config(settings, **{"linger.ms": 1, "client.id": f"{instance_id}-outputs"})
        )
        self._failures: list[str] = []

    def notification(self, delivery: Delivery, alert: Mapping[str, Any]) -> None:
        """The delivery's Notification as it stands now."""
        value = self._encode(notification_value(delivery, alert))
        self._produce(self.names.notifications, value, delivery.alert_id.encode(),
                      headers=_trace_headers(delivery))  # fmt: skip

    def changes(self, partition: int, changes: list[tuple[str, bytes | None]]) -> None:
        for key, value in changes:
            self._produce(self.names.notifier_changelog, value, key.encode(), partition=partition)

    def undecodable(self, message: Any, error: Exception) -> None:
        """An alert that does not decode, as it came, with the reason."""
        headers = dead_letter_headers(
            stage=DECODE, exc=error, topic=message.topic(), partition=message.partition(),
            offset=message.offset(), instance_id=self.instance_id, detector="",
            carried=trace_headers(message.headers() or []),
        )  # fmt: skip
        self._produce(self.names.notifications_dlq, message.value(), message.key(), headers)

    def failed(self, delivery: Delivery, alert: Mapping[str, Any], partition: int) -> None:
        """A delivery that FAILED: the alert as its channel would have got it, and why."""
        assert delivery.status == FAILED
        error = DeliveryFailed(f"{delivery.channel}: {delivery.last_error}")
        headers = dead_letter_headers(
            stage=DELIVER, exc=error, topic=self.names.alerts, partition=partition,
            offset=delivery.offset, instance_id=self.instance_id,
            detector=str(alert.get("detector", "")), attempts=delivery.attempts,
            carried=[*_trace_headers(delivery), (CHANNEL_HEADER, delivery.channel.encode())],
        )  # fmt: skip
        self._produce(self.names.notifications_dlq, webhook_body(alert),
                      delivery.alert_id.encode(), headers)  # fmt: skip

    def poll(self) -> None:
        self._producer.poll(0)

    def settle(self, timeout_s: float = 30.0) -> None:
        """Return once the broker acknowledged everything written; else OutputError."""
        left = self._producer.flush(timeout_s)
        if left or self._failures:
            reasons = "; ".join(self._failures[:3]) or f"{left} record(s) unacknowledged"
            self._failures.clear()
            raise OutputError(f"Kafka did not take the notifier's records: {reasons}")

    def _produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        headers: list[tuple[str, bytes]] | None = None,
        partition: int = -1,
    ) -> None:
        while True:
            try:
                self._producer.produce(topic, value, key, partition=partition, headers=headers,
                                       on_delivery=self._delivered)  # fmt: skip
                return
            except BufferError:  # the local queue is full: let the broker catch up
                self._producer.poll(0.1)

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._failures.append(f"{message.topic()}: {error}")
            log.error("a record to %s was not written: %s", message.topic(), error)


def _trace_headers(delivery: Delivery) -> list[tuple[str, bytes]]:
    return [(k, v.encode()) for k, v in (delivery.trace or {}).items()]
