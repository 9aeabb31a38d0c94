"""A customer's system as it would feed the mesh: a plain confluent-kafka producer of JSON
transactions, paced in 10 ms ticks with ``time.sleep`` between them (no spinning).

Beside the project's generator (:mod:`tools.loadgen`, seeded, with invalid records and planted
patterns of three detectors) the e2e benchmark feeds this too, the way issue 29's user did: about
100 000 distinct customers, and 1 % planted large amounts, each by a customer of its own, so each
planted record raises exactly one ``large_amount`` alert and no other detector's state is
disturbed by it. The producer keeps librdkafka's defaults (its own partitioner included) except a
short linger, as an ordinary client would.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Producer

from shared.endpoints import resolve_bootstrap
from shared.kafka.security import client_security
from shared.settings import Settings

#: Records are sent in ticks of this many seconds: rate / 100 records every 10 ms.
TICK_S = 0.01
#: Share of planted large amounts (above every currency's threshold in USD).
PLANTED_SHARE = 0.01
PLANTED_AMOUNT_USD = 50_000.0
CUSTOMERS = 100_000


@dataclass(frozen=True)
class PlainFeedReport:
    delivered: int
    planted: int
    seconds: float


def transaction(rng: random.Random, now_ms: int, planted: bool) -> tuple[bytes, bytes]:
    """One raw transaction as a customer's system sends it: (key, JSON value)."""
    if planted:  # a customer of its own, so no other detector's state sees it
        customer = f"cus_plant_{uuid.UUID(int=rng.getrandbits(128)).hex[:12]}"
        amount = PLANTED_AMOUNT_USD
    else:
        customer = f"cus_plain_{rng.randrange(CUSTOMERS):06d}"
        amount = round(rng.uniform(5.0, 500.0), 2)
    value = {
        "record_id": f"txn_{uuid.UUID(int=rng.getrandbits(128)).hex[:16]}",
        "customer_id": customer,
        "event_time": now_ms,
        "amount": amount,
        "currency": "USD",
        "merchant_id": f"mer_{rng.randrange(5_000):06d}",
        "country": "US",
        "mcc": "5814",
        "channel": "ecom",
    }
    return customer.encode(), json.dumps(value, separators=(",", ":")).encode()


def feed_plain(
    settings: Settings,
    topic: str,
    rate: int,
    seconds: float,
    seed: int,
    stop: threading.Event | None = None,
) -> PlainFeedReport:
    """Send ``rate`` transactions a second to ``topic`` for ``seconds`` (or until ``stop`` is
    set, for a feed whose end is decided while it runs); what was delivered."""

    producer = Producer({"bootstrap.servers": resolve_bootstrap(settings), "linger.ms": 5,
                         "client.id": "plain-feed", **client_security(settings)})  # fmt: skip
    rng = random.Random(seed)
    per_tick = rate * TICK_S
    started = time.monotonic()
    owed, sent, planted, failed = 0.0, 0, 0, 0

    def delivered(error, _message) -> None:  # type: ignore[no-untyped-def]
        nonlocal failed
        failed += error is not None

    tick = started
    while tick - started < seconds and not (stop is not None and stop.is_set()):
        owed += per_tick
        now_ms = int(time.time() * 1000)
        while owed >= 1:
            plant = rng.random() < PLANTED_SHARE
            key, value = transaction(rng, now_ms, plant)
            producer.produce(topic, value, key=key, on_delivery=delivered)
            owed, sent, planted = owed - 1, sent + 1, planted + plant
        producer.poll(0)
        tick += TICK_S
        time.sleep(max(0.0, tick - time.monotonic()))
    producer.flush(30)
    return PlainFeedReport(sent - failed, planted, time.monotonic() - started)
