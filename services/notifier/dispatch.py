"""Deliveries in flight: a bounded worker pool per channel, behind that channel's breaker.

The notifier's loop takes the book's due deliveries and offers each here. A channel runs at most
its ``concurrency`` attempts at once; beyond that an offer is refused ("busy") and the delivery
stays due for the next round, so a slow receiver never queues up work or threads, and never
delays another channel. A channel whose breaker is open refuses too ("open"): the loop postpones
the delivery to when the breaker lets a trial through, without spending an attempt.

Outcomes are collected from the workers and handed back on the loop's thread
(:meth:`Dispatcher.finished`), which also tells each breaker, so no state is shared across
threads but the queue.
"""

from __future__ import annotations

import queue
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from services.notifier.book import Delivery
from services.notifier.breaker import Breaker
from services.notifier.outcome import Outcome

SENT, BUSY, OPEN = "sent", "busy", "open"


class Sender(Protocol):
    def send(
        self, body: bytes, idempotency_key: str, extra_headers: Mapping[str, str] | None = None
    ) -> Outcome: ...

    def close(self) -> None: ...


class Dispatcher:
    def __init__(
        self,
        senders: Mapping[str, Sender],
        concurrency: Mapping[str, int],
        breakers: Mapping[str, Breaker],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.senders, self.concurrency, self.breakers = senders, concurrency, breakers
        self._clock = clock
        self._pools = {
            name: ThreadPoolExecutor(concurrency[name], thread_name_prefix=f"notify-{name}")
            for name in senders
        }
        self._in_flight: dict[str, Delivery] = {}
        self._busy: Counter[str] = Counter()
        self._done: queue.SimpleQueue[tuple[Delivery, Outcome]] = queue.SimpleQueue()

    def in_flight(self, channel: str | None = None) -> list[Delivery]:
        return [d for d in self._in_flight.values() if channel in (None, d.channel)]

    def has_room(self, channel: str) -> bool:
        """Whether ``channel`` could start one more attempt now (its breaker aside)."""
        return self._busy[channel] < self.concurrency[channel]

    def offer(self, entry: Delivery, body: bytes, headers: Mapping[str, str]) -> str:
        """Start ``entry``'s next attempt if its channel has room and its breaker allows."""
        if entry.key in self._in_flight or not self.has_room(entry.channel):
            return BUSY
        if not self.breakers[entry.channel].allows(self._clock()):
            return OPEN
        self._in_flight[entry.key] = entry
        self._busy[entry.channel] += 1
        sender = self.senders[entry.channel]

        def attempt() -> None:
            try:
                outcome = sender.send(body, entry.alert_id, headers)
            except Exception as error:  # a channel's bug must not lose the delivery
                outcome = Outcome(False, True, None, f"{type(error).__name__}: {error}", 0.0)
            self._done.put((entry, outcome))

        self._pools[entry.channel].submit(attempt)
        return SENT

    def finished(self, wait_s: float = 0.0) -> list[tuple[Delivery, Outcome]]:
        """Attempts that ended since the last call (waiting up to ``wait_s`` for the first if
        none has); their breakers are told here."""
        ended: list[tuple[Delivery, Outcome]] = []
        while True:
            try:
                if wait_s > 0 and not ended:
                    entry, outcome = self._done.get(timeout=wait_s)
                else:
                    entry, outcome = self._done.get_nowait()
            except queue.Empty:
                return ended
            del self._in_flight[entry.key]
            self._busy[entry.channel] -= 1
            self.breakers[entry.channel].record(outcome.delivered, self._clock())
            ended.append((entry, outcome))

    def close(self, wait: bool = True) -> None:
        for pool in self._pools.values():
            pool.shutdown(wait=wait, cancel_futures=not wait)
        for sender in self.senders.values():
            sender.close()
