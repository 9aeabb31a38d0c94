"""State at scale: ``velocity`` holding a million customers at once, and coming back from it.

The seeds' platform lost its stateful jobs to memory and to restores that took longer than the
outage (seeds 003 and 005); this scenario measures both for the runtime's state. The feed has
2 000 000 transactions of 1 000 000 distinct customers, each customer twice, all within one
minute of event time: no bucket expires during the run, so the instance ends holding every
customer's windows, about 1.5 buckets each, and writes each of them to its changelog.

Three figures, each from a process of its own (``python -m bench.drain``), so the resident
memory is the runtime's and not the benchmark's:

- the drain: records/s and peak resident memory with the state built from nothing;
- the restore: a second instance of the same group takes every partition, replays the changelog
  (it holds the state of the whole run) and processes a few new records; its restore time and
  peak resident memory are the price of a crash or a rebalance at this size;
- Kafka Streams' hopping windowed count (RocksDB) over the same topic: the drain and, a second
  run of the same application into an empty state folder, its own restore.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Iterator

from confluent_kafka import Producer

from bench.drain import drain_process
from bench.kafka_fixture import create_topic
from bench.kstreams_peer import run
from bench.result import Result
from shared.avro import AvroSerializer
from shared.kafka.backpressure import produce_waiting
from shared.kafka.config import producer_config
from shared.settings import Settings
from shared.topic_names import TopicNames

CUSTOMERS = 1_000_000
RECORDS = 2 * CUSTOMERS
PARTITIONS = 8
#: The feed spans this much event time, ending about when it is made: near the wall clock, so
#: Kafka Streams' changelogs (time-retained as well as compacted) keep what it restores.
EVENT_SPAN_MS = 60_000
#: Records sent after the drain so the restoring instance has something to process and stop on.
LATE_RECORDS = 64


#: What every transaction of the feed shares; the optional fields stay empty.
SHARED = {"currency": "USD", "country": "US", "channel": "ecom", "mcc": "5814", "attributes": {}}


def transactions(first: int, count: int, start_ms: int) -> Iterator[tuple[bytes, dict]]:
    """(key, transaction) for record numbers ``first .. first+count``: customer ``i mod
    CUSTOMERS``, event times from ``start_ms`` spread evenly over EVENT_SPAN_MS."""
    for i in range(first, first + count):
        customer = f"cus_{i % CUSTOMERS:012d}"
        record = {
            "record_id": f"txn_{i:016x}",
            "customer_id": customer,
            "event_time": start_ms + i * EVENT_SPAN_MS // RECORDS,
            "amount": 10.0 + i % 400,
            "merchant_id": f"mer_{i % 5000:06d}",
            **SHARED,
        }
        yield customer.encode(), record


def produce(settings: Settings, topic: str, first: int, count: int, start_ms: int) -> None:
    """Encode and send records ``first .. first+count`` to ``topic``."""

    encode = AvroSerializer("transaction").encode
    producer = Producer(producer_config(settings, **{"linger.ms": 20}))
    for key, record in transactions(first, count, start_ms):
        produce_waiting(producer, topic, encode(record), key)
    if producer.flush(120):
        raise RuntimeError(f"the state-scale feed was not acknowledged within 120 s ({topic})")


def drain_velocity(settings: Settings, inputs: dict[str, str], prefix: str, total: int) -> dict:
    """velocity on one instance in a process of its own (bench/drain.py): its figures."""
    args = [settings.bootstrap_servers, "velocity", json.dumps(inputs), prefix, str(total)]
    return drain_process([sys.executable], args, "host")


def run_state_scale(settings: Settings) -> list[Result]:
    """The runtime's drain and restore rows (and Kafka Streams' when its peer builds)."""
    topic = create_topic(settings, "state-scale", PARTITIONS)
    start_ms = int(time.time() * 1000) - EVENT_SPAN_MS
    produce(settings, topic, 0, RECORDS, start_ms)
    prefix = f"bench.state.{uuid.uuid4().hex[:8]}."
    for name in (TopicNames(prefix).alerts, TopicNames(prefix).detectors_dlq):
        create_topic(settings, "", PARTITIONS, name=name)
    inputs = {"transactions": topic}
    drained = drain_velocity(settings, inputs, prefix, RECORDS)
    produce(settings, topic, RECORDS, LATE_RECORDS, start_ms)
    restored = drain_velocity(settings, inputs, prefix, LATE_RECORDS)
    rows = [
        Result(
            "state_velocity_1m",
            drained["records"],
            drained["seconds"],
            notes=f"runtime, 1M customers held, peak RSS {drained['rss_mb']:.0f} MB, "
            f"{drained['changelog']} changelog writes",
            extra={"rss_mb": drained["rss_mb"], "changelog": drained["changelog"]},
        ),
        Result(
            "state_velocity_restore",
            restored["restored"],
            restored["restore_s"],
            notes=f"changelog updates applied/s; restore {restored['restore_s']:.1f} s, "
            f"peak RSS {restored['rss_mb']:.0f} MB",
            extra={"rss_mb": restored["rss_mb"], "restore_s": restored["restore_s"]},
        ),
    ]
    return rows + kstreams_rows(settings, topic, start_ms)


def kstreams_rows(settings: Settings, topic: str, start_ms: int) -> list[Result]:
    """Kafka Streams' hopping count (the runtime's windows, RocksDB) over the same topic, then a
    second run of the same application into an empty state folder: its restore."""

    application = f"bench-state-kstreams-{uuid.uuid4().hex[:8]}"
    sink = create_topic(settings, "state-kstreams-alerts", PARTITIONS)
    drained = run(settings, "hopping_count", topic, sink, RECORDS, 1200, application)
    # New records for the second run to stop on: the first may have read the runtime's late ones.
    produce(settings, topic, RECORDS + LATE_RECORDS, LATE_RECORDS, start_ms)
    restored = run(settings, "hopping_count", topic, sink, LATE_RECORDS, 1200, application)
    return [
        Result(
            "kstreams_state_1m",
            drained["records"],
            drained["seconds"] + drained.get("close_seconds", 0.0),
            notes=f"Kafka Streams hopping 60 s/5 s count, 1M customers, RocksDB, peak RSS "
            f"{drained['rss_mb']:.0f} MB",
            extra={"rss_mb": drained["rss_mb"]},
        ),
        Result(
            "kstreams_state_restore",
            restored.get("restored", 0),
            restored.get("restore_seconds", 0.0),
            notes=f"changelog records restored/s; restore {restored.get('restore_seconds', 0):.1f}"
            f" s, peak RSS {restored['rss_mb']:.0f} MB",
            extra={"rss_mb": restored["rss_mb"]},
        ),
    ]
