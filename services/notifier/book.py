"""The notifier's delivery book: which alert went to which channel, and how far that got.

One book per ``alerts`` partition, so it moves with the partition on a rebalance and is rebuilt
from the notifier's changelog (co-partitioned with ``alerts``, compacted, key
``<alert_id>/<channel>``) after a restart. It is what makes "notified once" hold although
everything upstream is at-least-once:

* **admit**: an alert becomes one PENDING delivery per channel its rule names, unless the book
  already has that (alert, channel): a duplicate or a replay is suppressed and counted;
* a PENDING entry carries the alert itself, so the consumer's offset can be committed as soon as
  the entry is in the changelog: delivery is driven by the book, not by the consumer's position,
  and a slow channel never holds the partition back;
* **due** / **attempted**: what to (re)try now, and each attempt's outcome: DELIVERED, a retry at
  the time the channel's backoff says, or FAILED (dead-lettered) after its last attempt;
* **expire**: finished entries are forgotten ``ttl_s`` after they finished (pending ones never),
  with a tombstone in the changelog: state has a TTL, the seeds' unbounded stores do not repeat.
  Until then a finished entry is held in memory as its key and when it finished, nothing more
  (what the duplicate check and expiry need; its outcome is in the changelog): the book holds
  every delivery of the TTL, 7 days by default, so its size per entry is what a week of alerts
  costs: about 115 bytes (a full entry, 460 bytes and more with its own trace context, grew the
  notifier 18 MiB an hour in the soak at 1 000 records/s).

A restart mid-retry resumes from the last recorded attempt; at worst the attempt in flight is
sent again, with the same idempotency key (the alert id), which the receiver can drop.

Pure bookkeeping: no Kafka, no HTTP, no clock of its own. ``now_s`` is wall-clock seconds
(``time.time()``): entries outlive the process in the changelog, so a monotonic clock, which
restarts with the process, would make a restored retry due decades late or at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

PENDING, DELIVERED, FAILED = "PENDING", "DELIVERED", "FAILED"


@dataclass(frozen=True)
class Delivery:
    """One alert to one channel."""

    alert_id: str
    channel: str
    status: str
    attempts: int
    #: when the next attempt is due (PENDING), else when it finished
    at_s: float
    #: when the alert was admitted: the start of its notification latency
    admitted_s: float
    #: the decoded alert while PENDING (what a restarted notifier delivers), then None
    alert: Mapping[str, Any] | None
    last_error: str | None = None
    #: the alert's trace context (``traceparent``, ``tracestate``): each attempt's span is its
    #: child, after a restart too
    trace: Mapping[str, str] | None = None
    #: the alert's offset in its ``alerts`` partition, for a dead letter's source coordinates
    offset: int = -1
    #: the raw record's Kafka timestamp (epoch ms) if the alert carries it: the start of the
    #: end-to-end latency, raw record to notification
    source_ms: int | None = None

    @property
    def key(self) -> str:
        return delivery_key(self.alert_id, self.channel)

    def to_json(self) -> bytes:
        # vars(), not asdict(): asdict deep-copies the alert inside, a tenth of a millisecond a
        # delivery for nothing (the JSON encoder copies what it needs anyway).
        return json.dumps(vars(self), separators=(",", ":"), default=_json_default).encode()

    @classmethod
    def from_json(cls, value: bytes) -> Delivery:
        fields = json.loads(value)
        return cls(**fields)


def delivery_key(alert_id: str, channel: str) -> str:
    return f"{alert_id}/{channel}"


class DeliveryBook:
    """The deliveries of one ``alerts`` partition (see the module's docstring)."""

    def __init__(self, ttl_s: float) -> None:
        if ttl_s <= 0:
            raise ValueError("the delivery book's TTL must be positive")
        self.ttl_s = ttl_s
        # Kept apart so each round's work is proportional to what is in flight, not to the
        # (much larger) number of deliveries remembered for the TTL: ``due`` reads only the
        # pending ones, ``expire`` only the oldest finished ones (in finishing order). Pending
        # ones are kept per channel, in admission order, so a round looks at a channel's
        # deliveries only while that channel has room (``due_in``): a thousand deliveries
        # waiting for a slow channel cost the fast one nothing.
        self._pending: dict[str, dict[str, Delivery]] = {}
        #: finished key -> when it finished (``at_s``), in finishing order
        self._finished: dict[str, float] = {}
        self._dirty: dict[str, Delivery | None] = {}
        #: duplicates suppressed since the book was made (a replay counts per channel)
        self.duplicates = 0

    def __len__(self) -> int:
        return self.pending + len(self._finished)

    @property
    def pending(self) -> int:
        """Deliveries not finished yet (due now, waiting for a retry, or in flight)."""
        return sum(len(waiting) for waiting in self._pending.values())

    def get(self, alert_id: str, channel: str) -> Delivery | None:
        """The PENDING delivery of ``alert_id`` to ``channel``, if there is one."""
        return self._pending.get(channel, {}).get(delivery_key(alert_id, channel))

    def finished_at(self, alert_id: str, channel: str) -> float | None:
        """When the delivery of ``alert_id`` to ``channel`` finished, if the book still
        remembers it (delivered or failed, within the TTL)."""
        return self._finished.get(delivery_key(alert_id, channel))

    def admit(
        self,
        alert: Mapping[str, Any],
        channels: Iterable[str],
        now_s: float,
        *,
        trace: Mapping[str, str] | None = None,
        offset: int = -1,
        source_ms: int | None = None,
    ) -> list[Delivery]:
        """New PENDING deliveries of ``alert`` (decoded, with ``alert_id``) to ``channels``,
        due now; an (alert, channel) the book already has is a duplicate and is skipped."""
        admitted = []
        for channel in channels:
            key = delivery_key(str(alert["alert_id"]), channel)
            if key in self._pending.get(channel, ()) or key in self._finished:
                self.duplicates += 1
                continue
            entry = Delivery(str(alert["alert_id"]), channel, PENDING, 0, now_s, now_s, alert,
                             trace=trace, offset=offset, source_ms=source_ms)  # fmt: skip
            self._put(entry)
            admitted.append(entry)
        return admitted

    def due(self, now_s: float) -> list[Delivery]:
        """PENDING deliveries whose next attempt is due, the longest waiting first."""
        due = [e for waiting in self._pending.values() for e in waiting.values() if e.at_s <= now_s]
        return sorted(due, key=lambda e: (e.at_s, e.key))

    def due_in(self, channel: str, now_s: float) -> Iterator[Delivery]:
        """``channel``'s PENDING deliveries that are due, in admission order, lazily: the caller
        stops reading when the channel has no room left. It may postpone or record an attempt
        of what it read (values change, the order does not) but must not admit meanwhile."""
        for entry in self._pending.get(channel, {}).values():
            if entry.at_s <= now_s:
                yield entry

    def attempted(
        self,
        entry: Delivery,
        now_s: float,
        *,
        delivered: bool,
        error: str | None = None,
        retry_in_s: float | None = None,
    ) -> Delivery:
        """Record one attempt: delivered, or failed with ``retry_in_s`` (None: no attempt is
        left, the delivery FAILED and goes to the dead letters)."""
        current = self._pending_entry(entry, "record an attempt of")
        attempts = current.attempts + 1
        if delivered:
            done = replace(current, status=DELIVERED, attempts=attempts, at_s=now_s, alert=None,
                           last_error=None)  # fmt: skip
        elif retry_in_s is None:
            done = replace(current, status=FAILED, attempts=attempts, at_s=now_s, alert=None,
                           last_error=error)  # fmt: skip
        else:
            done = replace(current, attempts=attempts, at_s=now_s + retry_in_s, last_error=error)
        self._put(done)
        return done

    def postpone(self, entry: Delivery, until_s: float) -> Delivery:
        """Make a PENDING delivery due at ``until_s`` without spending an attempt (its
        channel's breaker is open until then)."""
        current = self._pending_entry(entry, "postpone")
        later = replace(current, at_s=max(current.at_s, until_s))
        self._put(later)
        return later

    def expire(self, now_s: float) -> int:
        """Forget finished deliveries older than the TTL; how many went."""
        old = []
        for key, done_s in self._finished.items():  # in finishing order: stop at the first young
            if now_s - done_s < self.ttl_s:
                break
            old.append(key)
        for key in old:
            del self._finished[key]
            self._dirty[key] = None
        return len(old)

    def changes(self) -> list[tuple[str, bytes | None]]:
        """What changed since the last call, for the changelog: key -> value (None removes)."""
        drained = [(k, None if e is None else e.to_json()) for k, e in self._dirty.items()]
        self._dirty.clear()
        return drained

    def restore(self, key: str, value: bytes | None) -> None:
        """Apply one changelog record (in log order) while the partition is being restored."""
        if value is None:
            channel = key.rsplit("/", 1)[-1]
            self._pending.get(channel, {}).pop(key, None)
            self._finished.pop(key, None)
        else:
            self._place(Delivery.from_json(value))

    def _pending_entry(self, entry: Delivery, doing: str) -> Delivery:
        current = self._pending.get(entry.channel, {}).get(entry.key)
        if current is None:
            raise ValueError(f"no pending delivery {entry.key} to {doing}")
        return current

    def _put(self, entry: Delivery) -> None:
        self._place(entry)
        self._dirty[entry.key] = entry

    def _place(self, entry: Delivery) -> None:
        if entry.status == PENDING:
            self._pending.setdefault(entry.channel, {})[entry.key] = entry
        else:  # finished now: to the end of the finishing order
            self._pending.get(entry.channel, {}).pop(entry.key, None)
            self._finished.pop(entry.key, None)
            self._finished[entry.key] = entry.at_s


def _json_default(value: Any) -> Any:
    """Decoded Avro values JSON does not know (bytes of decimals, datetimes) as strings."""
    if isinstance(value, bytes):
        return value.hex()
    return str(value)
