"""next_batch: what is fetched is taken at once, a lone record waits for nobody (issue 49)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.kafka.batches import next_batch


@dataclass
class _Fetched:
    """A consumer's prefetch queue as ``consume(n, timeout)`` serves it: up to ``n`` of what is
    there; when fewer are there it waits the whole timeout (librdkafka's batch consume), which
    the calls record."""

    queue: list[str]
    arriving: list[str] = field(default_factory=list)
    calls: list[tuple[int, float]] = field(default_factory=list)

    def consume(self, n: int, timeout: float) -> list[str]:
        self.calls.append((n, timeout))
        if not self.queue and timeout > 0:
            self.queue, self.arriving = self.arriving, []
        taken, self.queue = self.queue[:n], self.queue[n:]
        return taken


def test_what_is_fetched_is_taken_without_waiting() -> None:
    consumer = _Fetched(queue=[f"m{i}" for i in range(700)])
    assert next_batch(consumer, 500, wait_s=0.2) == [f"m{i}" for i in range(500)]
    assert consumer.calls == [(500, 0)]


def test_a_lone_record_is_waited_for_alone_and_taken_with_what_came_along() -> None:
    consumer = _Fetched(queue=[], arriving=["a", "b"])
    assert next_batch(consumer, 500, wait_s=0.2) == ["a", "b"]
    # the only blocking call asks for one record: it returns as that one arrives
    assert consumer.calls == [(500, 0), (1, 0.2), (499, 0.0)]


def test_a_fill_wait_is_the_caller_s_choice() -> None:
    consumer = _Fetched(queue=[], arriving=["a"])
    next_batch(consumer, 10, wait_s=0.2, fill_s=0.05)
    assert consumer.calls[-1] == (9, 0.05)


def test_nothing_arriving_returns_nothing_after_the_wait() -> None:
    consumer = _Fetched(queue=[])
    assert next_batch(consumer, 500, wait_s=0.2) == []
    assert consumer.calls == [(500, 0), (1, 0.2)]


def test_no_wait_asks_once() -> None:
    consumer = _Fetched(queue=[])
    assert next_batch(consumer, 500, wait_s=0.0) == []
    assert consumer.calls == [(500, 0)]
