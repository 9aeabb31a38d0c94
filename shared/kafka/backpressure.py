"""Producing without dropping a record when the client's local queue is full."""

from __future__ import annotations

from typing import Any


def produce_waiting(
    producer: Any,
    topic: str,
    value: bytes | None,
    key: bytes | None,
    headers: list[tuple[str, bytes]] | None = None,
) -> None:
    """``producer.produce`` that, on a full queue, serves delivery reports and tries again.

    librdkafka raises instead of blocking when ``queue.buffering.max.messages`` is reached; a
    producer that ignored that would lose the record.
    """
    while True:
        try:
            producer.produce(topic, value, key, headers=headers)
            return
        except BufferError:
            producer.poll(0.05)
