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

Every record belongs to one ``alerts`` partition (its delivery book's), and goes to a partition
that follows it: the changelog's of the same number, and ``notifications`` / ``notifications.dlq``
partition ``number % their count`` (an alert id always comes from the same alerts partition, so
each key still has one partition, which compaction needs). So when a partition of these topics
has no leader (a one-replica topic on a cluster that lost a broker), what waits for it is a few
alerts partitions, which the notifier holds back (:mod:`services.notifier.holding`), not every
partition as a key hashed over all of them would make it. :meth:`settle` says which.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, Producer

from services.notifier.book import FAILED, Delivery
from services.notifier.config import NotifierConfig
from services.notifier.records import notification_value, webhook_body
from shared.avro import AvroSerializer, Catalogue
from shared.dead_letters import DECODE, DELIVER, dead_letter_headers
from shared.kafka.config import producer_config
from shared.kafka.delivery_tracker import DeliveryFailed as Unacknowledged
from shared.kafka.delivery_tracker import DeliveryTracker, OutputPartition
from shared.kafka.leaders import offline_partitions
from shared.settings import Settings
from shared.tracing import trace_headers

log = logging.getLogger(__name__)

#: The channel a dead-lettered delivery was meant for.
CHANNEL_HEADER = "mesh.notifier.channel"

#: How long a record may wait for its partition's leader before it fails (librdkafka's default
#: is 300 s). A record that failed so holds back its alerts partition; the others go on.
DELIVERY_TIMEOUT_S = 30.0
#: How long :meth:`NotifierOutputs.settle` waits at most: past the delivery timeout, so a record
#: without a leader fails as such (and holds its partition) before the wait gives up.
SETTLE_S = DELIVERY_TIMEOUT_S + 15.0


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
            producer_config(settings, **{
                "linger.ms": 1, "client.id": f"{instance_id}-outputs",
                "message.timeout.ms": int(DELIVERY_TIMEOUT_S * 1000),
            })
        )  # fmt: skip
        self.tracker = DeliveryTracker()
        self._counts = _partition_counts(
            self._producer, [self.names.notifications, self.names.notifications_dlq]
        )

    @property
    def metadata(self) -> Any:
        """A client to ask the cluster for leaders with (the producer)."""
        return self._producer

    def notification(self, delivery: Delivery, alert: Mapping[str, Any], partition: int) -> None:
        """The delivery's Notification as it stands now (``partition``: its alerts partition)."""
        value = self._encode(notification_value(delivery, alert))
        self._produce(self.names.notifications, value, delivery.alert_id.encode(), partition,
                      headers=_trace_headers(delivery))  # fmt: skip

    def changes(self, partition: int, changes: list[tuple[str, bytes | None]]) -> None:
        for key, value in changes:
            self._produce(self.names.notifier_changelog, value, key.encode(), partition,
                          exact=True)  # fmt: skip

    def undecodable(self, message: Any, error: Exception) -> None:
        """An alert that does not decode, as it came, with the reason."""
        headers = dead_letter_headers(
            stage=DECODE, exc=error, topic=message.topic(), partition=message.partition(),
            offset=message.offset(), instance_id=self.instance_id, detector="",
            carried=trace_headers(message.headers() or []),
        )  # fmt: skip
        self._produce(self.names.notifications_dlq, message.value(), message.key(),
                      message.partition(), headers=headers)  # fmt: skip

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
                      delivery.alert_id.encode(), partition, headers=headers)  # fmt: skip

    def poll(self) -> dict[int, set[OutputPartition]]:
        """Serve delivery reports; the alerts partitions whose records failed for want of a
        leader since the last :meth:`settle` or poll (taken: the caller holds them back)."""
        self._producer.poll(0)
        return self.tracker.take_unreached()

    def settle(self, timeout_s: float = SETTLE_S) -> dict[int, set[OutputPartition]]:
        """Return once the broker acknowledged everything written, but for the records that
        found no leader: returned as the alerts partitions they belong to, with the output
        partitions they wait for. A record refused, or still unsettled: OutputError."""
        try:
            return self.tracker.wait([self._producer], timeout_s, self.purge_if_leaderless)
        except Unacknowledged as error:
            raise OutputError(f"Kafka did not take the notifier's records: {error}") from None

    def purge_if_leaderless(self) -> None:
        """Records are slow to be acknowledged: if a partition written to has no leader, fail
        what is still queued now (never sent, so nothing is lost) instead of every partition
        waiting out the delivery timeout (shared/kafka/delivery_tracker.py)."""
        topics = [self.names.notifications, self.names.notifier_changelog,
                  self.names.notifications_dlq]  # fmt: skip
        lost = offline_partitions(self._producer, topics)
        if lost:
            log.warning("partition(s) without a leader: %s; failing what is queued, to hold back "
                        "only the alerts partitions that need them",
                        ", ".join(f"{t}[{p}]" for t, p in sorted(lost)))  # fmt: skip
            self._producer.purge(in_queue=True, in_flight=False, blocking=True)

    def _produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        source: int,
        headers: list[tuple[str, bytes]] | None = None,
        exact: bool = False,
    ) -> None:
        """Produce a record of alerts partition ``source``: to partition ``source`` itself
        (``exact``), else to ``source`` modulo the topic's partition count (the key's hash if
        that count is not known)."""
        count = self._counts.get(topic)
        partition = source if exact else (source % count if count else -1)
        while True:
            try:
                self._producer.produce(topic, value, key, partition=partition, headers=headers,
                                       on_delivery=self.tracker.for_input(source))  # fmt: skip
                self.tracker.sent()
                return
            except BufferError:  # the local queue is full: let the broker catch up
                self._producer.poll(0.1)


def _trace_headers(delivery: Delivery) -> list[tuple[str, bytes]]:
    return [(k, v.encode()) for k, v in (delivery.trace or {}).items()]


def _partition_counts(producer: Any, topics: list[str]) -> dict[str, int]:
    """Each topic's partition count, as the cluster says now (none known if it does not
    answer: records are then partitioned by key)."""
    try:
        found = producer.list_topics(timeout=10).topics
    except KafkaException:
        return {}
    return {name: len(found[name].partitions) for name in topics
            if name in found and found[name].partitions}  # fmt: skip
