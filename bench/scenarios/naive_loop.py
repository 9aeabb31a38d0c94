"""The peer a user would write first: a plain batched loop of confluent-kafka and fastavro.

It applies ``large_amount``'s rule to the detectors' feed with nothing of the runtime around it:
consume a batch, decode each record (fastavro, the writer schema the header names, the same
single-object framing), compare the amount with the currency's threshold, produce an alert's
bytes for the few that pass, flush, commit synchronously. No dead letters, no metrics, no state,
no tracing, no delivery tracking beyond the flush: what the runtime adds over it is the price of
those guarantees, and what it gains over it is what the runtime's own decoding and batching buy.
"""

from __future__ import annotations

import json
import time
import uuid
from io import BytesIO

from confluent_kafka import Consumer, Producer
from fastavro import schemaless_reader

from bench.kafka_fixture import create_topic
from bench.result import Result
from bench.scenarios.detectors import PARTITIONS, feed
from detectors.large_amount.detector import THRESHOLDS
from shared.avro.catalogue import load_catalogue
from shared.avro.single_object import HEADER_SIZE
from shared.kafka.config import consumer_config, producer_config
from shared.settings import Settings

BATCH = 2000


def run_naive_large_amount(settings: Settings) -> Result:
    """Records/s of the loop draining the feed's transactions, from its first batch."""
    data = feed(settings)
    sink = create_topic(settings, "naive-alerts", PARTITIONS)
    records, alerts, seconds = drain_naive(
        settings, data.topics["transactions"], sink, data.counts["transactions"]
    )
    return Result(
        "naive_large_amount",
        records,
        seconds,
        notes=f"plain confluent-kafka + fastavro loop, large_amount's rule, {alerts} alerts",
        extra={"alerts": alerts},
    )


def drain_naive(
    settings: Settings, source: str, sink: str, count: int, timeout_s: float = 300
) -> tuple[int, int, float]:
    """(records read, alerts produced, seconds from the first batch to the last record)."""

    writers = {v.fingerprint: v.codec_schema for v in load_catalogue() if v.name == "transaction"}
    consumer = Consumer(consumer_config(settings, f"bench-naive-{uuid.uuid4().hex[:8]}"))
    producer = Producer(producer_config(settings))
    consumer.subscribe([source])
    deadline = time.monotonic() + timeout_s
    records = alerts = 0
    started: float | None = None
    try:
        while records < count and time.monotonic() < deadline:
            batch = consumer.consume(BATCH, timeout=0.02)
            if not batch:
                continue
            started = started or time.perf_counter()
            for message in batch:
                value = message.value()
                body = BytesIO(value)
                body.seek(HEADER_SIZE)
                record = schemaless_reader(body, writers[value[2:HEADER_SIZE]], None)
                threshold = THRESHOLDS.get(record["currency"])
                if threshold is not None and record["amount"] > threshold:
                    alert = [record["customer_id"], record["amount"], record["currency"]]
                    producer.produce(sink, json.dumps(alert).encode(), message.key())
                    alerts += 1
            records += len(batch)
            producer.flush(30)
            consumer.commit(asynchronous=False)
        return records, alerts, (time.perf_counter() - started) if started else 0.0
    finally:
        consumer.close()
