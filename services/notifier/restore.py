"""Rebuild the delivery books of newly assigned ``alerts`` partitions from the changelog.

Every record of the partition's changelog applies, in log order: the loop writes an alert's
PENDING entries and has them acknowledged *before* it commits the alert, so the changelog is never
behind the committed offset. It may be ahead (a crash between the two): the alert then comes again
and the book, which already has it, suppresses it as the duplicate it is.

Every newly assigned partition is read at once, by a consumer of its own (group ``<notifier
group>.restore``, never joined), so the group's members never wait on a restore.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer

from services.notifier.book import DeliveryBook
from services.notifier.config import NotifierConfig
from shared.kafka.changelog import replay_partitions
from shared.kafka.config import consumer_config
from shared.settings import Settings

log = logging.getLogger(__name__)


def restore_books(
    settings: Settings, config: NotifierConfig, partitions: Iterable[int], instance_id: str
) -> dict[int, DeliveryBook]:
    """A book per partition number, as the changelog left it."""

    wanted = sorted(partitions)
    if not wanted:
        return {}
    group = f"{config.names.notifier_group}.restore"
    consumer = Consumer(consumer_config(settings, group, **{"client.id": f"{instance_id}-restore"}))
    try:
        started = time.monotonic()
        books = {partition: DeliveryBook(config.dedup_ttl_s) for partition in wanted}

        def apply(message: Any) -> None:
            books[message.partition()].restore(message.key().decode(), message.value())

        replay_partitions(consumer, config.names.notifier_changelog, wanted, apply)
        for partition, book in books.items():
            # What outlived its TTL while nobody owned the partition goes now; its tombstones
            # are the book's only changes (a restore itself writes nothing back).
            book.expire(time.time())
            log.info("restored notifier book %d: %d deliveries (%d pending) in %.2f s", partition,
                     len(book), book.pending, time.monotonic() - started)  # fmt: skip
    finally:
        consumer.close()
    return books
