"""The smoke driver and its checker, after Kafka's streams smoke test.

The driver sends transactions for KEYS customers at a steady rate from a thread; record ``n`` of
customer ``k`` has the id ``smk-<run>-<k>-<n>``, so the ids are unique and carry a per-key
sequence. It counts what it sent and keeps the ids the broker acknowledged (delivery callbacks,
idempotent producer, acks=all).

Two kinds of bad record, for the error cases, each at a fixed share of the records: **marked**
transactions (the merchant THROWING_MERCHANT, which the throwing detector fails on) and **poison
pills** (bytes that are no Avro record, carrying their id after POISON_PREFIX). Both should end
in a dead-letter topic, not as alerts.

The checker reads the echo detector's alerts (one per record, ``source_record_id`` = the record's
id) and counts, against the acknowledged ids: **seen** (distinct ids), **lost** (acknowledged,
never seen), **duplicated** (alerts beyond the first per id) and **out of order** (a first alert
whose sequence is below one already seen for its key, in its partition's order; repeats of a
replay are duplicates, not reordering).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Producer

from shared.avro import AvroSerializer
from shared.kafka.config import producer_config
from shared.settings import Settings
from testkit.avro_examples import examples

#: Customers the driver spreads its records over (every partition gets some).
KEYS = 64
#: The merchant of marked records (the throwing detector fails on its transactions).
THROWING_MERCHANT = "m-chaos-throws"
#: How a poison pill starts: an Avro string length of about 2 GB (no decoder gets past it),
#: then a readable tag and the pill's id.
POISON_PREFIX = b"\xfe\xff\xff\xff\x0fpoison:"


@dataclass(frozen=True)
class SmokeFigures:
    sent: int
    acknowledged: int
    seen: int
    lost: int
    duplicated: int
    out_of_order: int
    #: distinct ids in the dead-letter topic (bad records, where a case sends them)
    dead_lettered: int = 0


def record_id(run: str, key: int, sequence: int) -> str:
    return f"smk-{run}-{key}-{sequence}"


def parse_id(value: str) -> tuple[str, int, int] | None:
    """(run, key, sequence) of a smoke id, or None for any other record's id."""
    parts = value.split("-")
    if len(parts) != 4 or parts[0] != "smk":
        return None
    return parts[1], int(parts[2]), int(parts[3])


def poison_id(value: bytes | None) -> str | None:
    """The id a poison pill carries, or None for any other bytes."""
    if value is None or not value.startswith(POISON_PREFIX):
        return None
    return value[len(POISON_PREFIX) :].decode(errors="replace")


class SmokeDriver:
    """Sends ``rate`` records/s from a thread; every ``marked_every``-th record is marked and
    every ``poison_every``-th a poison pill (None: none)."""

    def __init__(
        self,
        settings: Settings,
        topic: str,
        run: str,
        rate: float,
        *,
        marked_every: int | None = None,
        poison_every: int | None = None,
    ) -> None:
        self.topic, self.run, self.rate = topic, run, rate
        self.marked_every, self.poison_every = marked_every, poison_every
        self.sent = 0
        self.acknowledged: set[str] = set()
        #: ids sent marked, and sent as poison pills
        self.marked: set[str] = set()
        self.poisoned: set[str] = set()
        self.errors: list[str] = []
        self._encode = AvroSerializer("transaction").encode
        self._template = examples("transaction")[0]
        # Quiet: the broker case makes librdkafka complain of the outage it is there to survive.
        tuned = {"linger.ms": 2, "message.timeout.ms": 300_000, "log_level": 2}
        self._producer = Producer(producer_config(settings, **tuned))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="smoke-driver", daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> SmokeDriver:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sending, and wait until the broker answered for everything sent."""
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join(60)
        self._producer.flush(300)

    def fill(self, count: int) -> None:
        """Send ``count`` records as fast as the producer takes them (no thread, no pacing) and
        wait until the broker answered for all: a topic preloaded for a drain."""
        for _ in range(count):
            self._send(self.sent % KEYS, self.sent // KEYS)
            self.sent += 1
            self._producer.poll(0)
        self._producer.flush(300)

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.is_set():
            ahead = self.sent / self.rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(min(ahead, 0.05))
                continue
            key, sequence = self.sent % KEYS, self.sent // KEYS
            self._send(key, sequence)
            self.sent += 1
            self._producer.poll(0)

    def _send(self, key: int, sequence: int) -> None:
        ident = record_id(self.run, key, sequence)
        record = {**self._template, "record_id": ident, "customer_id": f"smk-{key}",
                  "event_time": int(time.time() * 1000), "ingest_time": None}  # fmt: skip
        if _every(self.marked_every, self.sent):
            record["merchant_id"] = THROWING_MERCHANT
            self.marked.add(ident)
        if _every(self.poison_every, self.sent):
            value = POISON_PREFIX + ident.encode()
            self.poisoned.add(ident)
        else:
            value = self._encode(record)

        def delivered(error: Any, _message: Any, ident: str = ident) -> None:
            if error is None:
                self.acknowledged.add(ident)
            else:
                self.errors.append(str(error))

        while True:
            try:
                self._producer.produce(self.topic, value, record["customer_id"].encode(),
                                       on_delivery=delivered)  # fmt: skip
                return
            except BufferError:
                self._producer.poll(0.1)


def _every(every: int | None, n: int) -> bool:
    """Whether record ``n`` is one in ``every`` (the last of each run of ``every``)."""
    return every is not None and n % every == every - 1


def check(
    driver: SmokeDriver, alerts: list[tuple[int, str]], dead_letters: list[str] | None = None
) -> SmokeFigures:
    """The figures of ``driver``'s run from the alerts on the topic and the ids in the
    dead-letter topic (see the module doc). A bad record (marked or poison) is expected in the
    dead letters, any other in the alerts; missing from where it is expected, it is lost."""
    mine = [i for i in dead_letters or () if (p := parse_id(i)) is not None and p[0] == driver.run]
    dead = Counter(mine)
    counts: Counter[str] = Counter()
    highest: dict[int, int] = {}
    out_of_order = 0
    for _partition, ident in alerts:
        parsed = parse_id(ident)
        if parsed is None or parsed[0] != driver.run:
            continue
        counts[ident] += 1
        if counts[ident] > 1:
            continue
        _, key, sequence = parsed
        if sequence < highest.get(key, -1):
            out_of_order += 1
        highest[key] = max(highest.get(key, -1), sequence)
    seen = set(counts)
    bad = driver.acknowledged & (driver.marked | driver.poisoned)
    good = driver.acknowledged - bad
    return SmokeFigures(
        sent=driver.sent,
        acknowledged=len(driver.acknowledged),
        seen=len(seen),
        lost=len(good - seen) + len(bad - set(dead)),
        duplicated=sum(n - 1 for n in counts.values()) + sum(n - 1 for n in dead.values()),
        out_of_order=out_of_order,
        dead_lettered=len(dead),
    )
