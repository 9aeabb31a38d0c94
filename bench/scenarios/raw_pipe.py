"""The baseline: a raw confluent-kafka consume→produce copy, no decoding.

It follows the mesh's delivery protocol (batch consume, produce the batch, wait for the broker's
acknowledgements, commit synchronously), so any later scenario's ratio to it is the price of what
that scenario adds (decoding, rules, state, metrics), not of the protocol.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

from confluent_kafka import Consumer, Producer

from bench.kafka_fixture import create_topic
from bench.result import Result, percentile
from shared.kafka.backpressure import produce_waiting
from shared.kafka.config import consumer_config, producer_config
from shared.settings import Settings

BATCH = 2000
#: How long consume() waits to fill a batch: short, so a slow trickle is not held back.
BATCH_WAIT_S = 0.02


def fill(settings: Settings, topic: str, count: int, size: int) -> None:
    """Write ``count`` records of ``size`` random bytes, keyed over 10 000 customers."""

    producer = Producer(producer_config(settings))
    payload = os.urandom(size)
    for i in range(count):
        produce_waiting(producer, topic, payload, f"customer-{i % 10000}".encode())
    producer.flush(60)


def copy_batches(  # type: ignore[no-untyped-def]
    settings: Settings,
    source: str,
    sink: str,
    count: int,
    deadline: float,
    on_batch=None,
    assigned: threading.Event | None = None,
):
    """Copy ``count`` records from source to sink; returns (copied, seconds from first record)."""

    consumer = Consumer(
        consumer_config(settings, f"bench-pipe-{uuid.uuid4().hex[:8]}", **{"fetch.min.bytes": 1})
    )
    producer = Producer(producer_config(settings))
    consumer.subscribe([source], on_assign=lambda *_: assigned and assigned.set())
    copied, started = 0, None
    try:
        while copied < count and time.monotonic() < deadline:
            messages = consumer.consume(BATCH, timeout=BATCH_WAIT_S)
            if not messages:
                continue
            started = started or time.perf_counter()
            batch = [m for m in messages if m.error() is None]
            for message in batch:
                produce_waiting(producer, sink, message.value(), message.key())
            producer.flush(30)
            consumer.commit(asynchronous=False)
            copied += len(batch)
            if on_batch is not None:
                on_batch(batch)
        return copied, (time.perf_counter() - started) if started else 0.0
    finally:
        consumer.close()


def run_throughput(settings: Settings, count: int = 200_000, size: int = 200) -> Result:
    """Records/s of the pipe draining a backlog of ``count`` records (8 partitions).

    The backlog is copied twice and only the second copy is measured: the first scenario of a
    run meets a broker whose JVM has not compiled its request paths yet, and a cold first copy
    ran 20-30 % slower than the ones after it (117 k against 149 k records/s, same broker), which
    flattered every ratio to it.
    """
    source = create_topic(settings, "pipe-in", 8)
    fill(settings, source, count, size)
    for _pass in ("warm-up", "measured"):
        sink = create_topic(settings, "pipe-out", 8)
        copied, seconds = copy_batches(settings, source, sink, count, time.monotonic() + 300)
    notes = f"baseline; backlog of {size}-byte records, copied once to warm the broker first"
    return Result("raw_pipe", copied, seconds, notes=notes)


def run_latency(
    settings: Settings, rate: int = 5000, duration: float = 8.0, warm_up: float = 2.0
) -> Result:
    """Latency from a record's creation to its copy's acknowledgement, at a steady ``rate``.

    Records of the first ``warm_up`` seconds are copied but left out of the percentiles: the
    broker's and the clients' JIT and buffers warm up there (p99 is several times higher).
    """

    source = create_topic(settings, "lat-in", 8)
    sink = create_topic(settings, "lat-out", 8)
    count = int(rate * duration)
    latencies: list[float] = []
    first_created: list[int] = []
    assigned = threading.Event()

    def feed() -> None:
        assigned.wait(30)  # measure the steady state, not the group join
        producer = Producer(producer_config(settings, **{"linger.ms": 1}))
        payload = os.urandom(200)
        start = time.perf_counter()
        for i in range(count):
            pause = start + i / rate - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            produce_waiting(producer, source, payload, f"customer-{i % 10000}".encode())
            producer.poll(0)
        producer.flush(30)

    def record_latency(batch) -> None:  # type: ignore[no-untyped-def]
        now_ms = time.time() * 1000
        if first_created:
            latencies.extend(
                now_ms - m.timestamp()[1]
                for m in batch
                if m.timestamp()[1] >= first_created[0] + warm_up * 1000
            )
        else:
            first_created.append(min(m.timestamp()[1] for m in batch))

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    copied, seconds = copy_batches(
        settings, source, sink, count, time.monotonic() + duration + 60, record_latency, assigned
    )
    feeder.join()
    return Result(
        "raw_pipe_latency",
        copied,
        seconds,
        latency_p50_ms=percentile(latencies, 50),
        latency_p99_ms=percentile(latencies, 99),
        notes=f"paced at {rate}/s, first {warm_up:.0f} s not in percentiles",
        paced=True,
    )
