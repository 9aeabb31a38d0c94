"""Test doubles for the metrics tests: a clock the test moves, a producer that records."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


class FakeClock:
    """Seconds that only move when the test says so."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Produced:
    topic: str
    value: bytes
    key: str
    on_delivery: Callable[[Any, Any], None] | None


@dataclass
class FakeProducer:
    """Records produce/poll/flush like confluent-kafka's Producer, delivering nothing."""

    messages: list[Produced] = field(default_factory=list)
    polls: int = 0
    flushes: list[float] = field(default_factory=list)
    #: flush() returns this (messages "still in the queue").
    undelivered: int = 0
    #: produce() raises BufferError while this is > 0 (and counts it down).
    full_for: int = 0
    #: How many partitions list_topics() says every topic has.
    partitions: int = 4
    #: Partitions list_topics() says have no leader (leader -1); the others are led by node 1.
    leaderless: set[int] = field(default_factory=set)
    #: The topic list_topics() describes when asked for every topic.
    topic: str = "metrics"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def produce(
        self,
        topic: str,
        value: bytes,
        key: str,
        on_delivery: Callable[[Any, Any], None] | None = None,
    ) -> None:
        with self.lock:
            if self.full_for > 0:
                self.full_for -= 1
                raise BufferError("Local: Queue full")
            self.messages.append(Produced(topic, value, key, on_delivery))

    def poll(self, timeout: float = -1) -> int:
        self.polls += 1
        return 0

    def flush(self, timeout: float = -1) -> int:
        self.flushes.append(timeout)
        return self.undelivered

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """Metadata of one topic with :attr:`partitions` partitions, each led by node 1 unless
        in :attr:`leaderless`."""

        partitions = SimpleNamespace(partitions={
            n: SimpleNamespace(leader=-1 if n in self.leaderless else 1)
            for n in range(self.partitions)
        })  # fmt: skip
        return SimpleNamespace(topics={topic or self.topic: partitions})
