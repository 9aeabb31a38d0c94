"""``e2e_latency``: raw record to alert through the embedded mesh, real-time and micro-batch.

For each ingest mode a private mesh on the run's broker (its own MESH_HOME and topic prefix) runs
the ingest job as `mesh up` does (supervised, auto master) and the three reference detectors
(`mesh deploy`, as a user would). A slow warm-up feed with planted fraud runs until the first alert
appears: the seconds from starting the mesh to that alert are "ready to alert". Then a paced feed
of generated records with planted fraud runs at each offered rate for DURATION_S seconds.

Every alert of a paced feed is traced back through its source record: the raw record's Kafka
timestamp (the ``mesh.source.timestamp`` header ingest puts on the routed record), the routed
record's timestamp and the alert's. That gives raw -> records (ingest), records -> alert (the
detector hop) and raw -> alert, p50 / p99 / max, for every alert rather than a sample. The rate
actually sustained is what the mesh routed over the feed's duration, and the lag left when the
feed ended says whether it kept up.
"""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.result import Result, percentile
from bench.scenarios.deploy import _mesh
from shared.lineage import SOURCE_TIMESTAMP_HEADER
from shared.settings import PROJECT_ROOT, Settings
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka

MODES = ("real-time", "micro-batch")
RATES = (5000, 20000)
DURATION_S = 60
DETECTORS = ("large_amount", "velocity", "new_country")
#: The warm-up feed: records per second, and how long to wait for its first alert.
WARM_RATE, READY_TIMEOUT_S = 200, 300
#: After a feed: how long the alert count must stand still, and the longest wait for it.
QUIET_S, SETTLE_TIMEOUT_S = 10.0, 180.0


@dataclass
class Hops:
    """Per alert, in ms: raw -> records, records -> alert, raw -> alert."""

    ingest: list[float]
    detector: list[float]
    total: list[float]


def run_e2e(settings: Settings) -> list[Result]:
    results: list[Result] = []
    for mode in MODES:
        results.extend(_run_mode(settings, mode))
    return results


def _run_mode(settings: Settings, mode: str) -> list[Result]:
    from control.cli.topics import apply_declared
    from control.deploy.lifecycle import down
    from control.launch.ingest import ingest_process, start_ingest

    results = []
    with tempfile.TemporaryDirectory(prefix="mesh-bench-e2e-") as home:
        prefix = f"bench.e2e.{uuid.uuid4().hex[:8]}."
        private = replace(settings, home=Path(home), topic_prefix=prefix)
        env = {"MESH_BOOTSTRAP_SERVERS": private.bootstrap_servers, "MESH_HOME": home,
               "MESH_TOPIC_PREFIX": prefix}  # fmt: skip
        apply_declared(private)
        started = time.monotonic()
        start_ingest(private, {"MESH_INGEST_MODE": mode})
        try:
            for name in DETECTORS:
                _mesh(env, "deploy", str(PROJECT_ROOT / "detectors" / name))
            ready_s = _ready(private, started)
            for seed, rate in enumerate(RATES, start=1):
                results.append(_paced_run(private, mode, rate, seed, ready_s))
        finally:
            down(private, say=lambda line: None)
            ingest_process(private).stop()
    return results


def _feed(rate: int, seconds: float, seed: int) -> StreamConfig:
    """Generated raw records with planted fraud; event time runs no faster than 2 000 records/s,
    so the customer population stays large enough for the generator's velocity guarantees."""
    return StreamConfig(start_time_ms=int(time.time() * 1000), count=int(rate * seconds),
                        seed=seed, invalid_share=0.01, event_rate=min(rate, 2000),
                        customers=100_000)  # fmt: skip


def _ready(settings: Settings, started: float) -> float:
    """Seconds from starting the mesh until a warm-up feed's first alert is on the alerts topic."""
    stop = threading.Event()

    def warm() -> None:
        seed = 100
        while not stop.is_set():  # short slices, so the feed ends soon after the first alert
            options = SendOptions(topic_prefix=f"{settings.topic_prefix}raw", rate=WARM_RATE,
                                  progress=False)  # fmt: skip
            produce_to_kafka(_feed(WARM_RATE, 5, seed), options, settings)
            seed += 1

    feeder = threading.Thread(target=warm, daemon=True)
    feeder.start()
    try:
        consumer = _consumer(settings, [f"{settings.topic_prefix}alerts"])
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(m.error() is None for m in consumer.consume(100, timeout=0.5)):
                consumer.close()
                return time.monotonic() - started
        raise RuntimeError(f"no alert within {READY_TIMEOUT_S} s of starting the mesh")
    finally:
        stop.set()
        feeder.join(30)


def _paced_run(settings: Settings, mode: str, rate: int, seed: int, ready_s: float) -> Result:
    from shared.kafka.inspect import topic_views

    prefix = settings.topic_prefix
    outputs = [f"{prefix}records.transactions", f"{prefix}records.logins",
               f"{prefix}records.invalid"]  # fmt: skip
    routed_before = sum(v.written for v in topic_views(settings.bootstrap_servers, outputs))
    feed_start_ms = int(time.time() * 1000)
    options = SendOptions(topic_prefix=f"{prefix}raw", rate=rate, progress=False)
    sent_at = time.monotonic()
    report = produce_to_kafka(_feed(rate, DURATION_S, seed), options, settings)
    send_s = time.monotonic() - sent_at

    def routed_now() -> int:
        return sum(v.written for v in topic_views(settings.bootstrap_servers, outputs))

    routed_at_end = routed_now()
    lag_at_end = report.delivered - (routed_at_end - routed_before)
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while routed_now() - routed_before < report.delivered and time.monotonic() < deadline:
        time.sleep(1.0)
    alerts = [a for a in _settled_alerts(settings) if a[1] >= feed_start_ms]
    hops = _hops(settings, alerts, feed_start_ms)
    routed = routed_now()
    sustained = (routed_at_end - routed_before) / send_s
    parts = ", ".join(
        f"{name} p50/p99/max {_ms(values, 50)}/{_ms(values, 99)}/{max(values, default=0):.0f}"
        for name, values in (("raw->records", hops.ingest), ("records->alert", hops.detector))
    )
    return Result(
        f"e2e_{mode}_{rate // 1000}k",
        routed - routed_before,
        send_s,
        latency_p50_ms=percentile(hops.total, 50),
        latency_p99_ms=percentile(hops.total, 99),
        notes=(
            f"raw->alert of {len(hops.total)} alerts, max {max(hops.total, default=0):.0f} ms; "
            f"{parts}; offered {report.delivered / send_s:,.0f}/s, routed {sustained:,.0f}/s "
            f"during the feed, {lag_at_end:,} behind at its end; ready to alert "
            f"{ready_s:.0f} s after start"
        ),
        extra={
            "raw_to_alert_max_ms": max(hops.total, default=0.0),
            "raw_to_records_p50_ms": percentile(hops.ingest, 50) or 0.0,
            "raw_to_records_p99_ms": percentile(hops.ingest, 99) or 0.0,
            "records_to_alert_p50_ms": percentile(hops.detector, 50) or 0.0,
            "records_to_alert_p99_ms": percentile(hops.detector, 99) or 0.0,
            "routed_per_s": sustained,
            "lag_at_feed_end": float(lag_at_end),
            "ready_to_alert_s": ready_s,
        },
        paced=True,
    )


def _ms(values: list[float], q: float) -> str:
    found = percentile(values, q)
    return "-" if found is None else f"{found:.0f}"


def _settled_alerts(settings: Settings) -> list[tuple[Any, int]]:
    """Every alert on the topic as (message, its Kafka timestamp), read once no new alert has
    come for QUIET_S seconds (the detectors are done with the feed)."""
    consumer = _consumer(settings, [f"{settings.topic_prefix}alerts"])
    alerts: list[tuple[Any, int]] = []
    quiet_since, deadline = time.monotonic(), time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() - quiet_since < QUIET_S and time.monotonic() < deadline:
        batch = [m for m in consumer.consume(1000, timeout=0.5) if m.error() is None]
        if batch:
            quiet_since = time.monotonic()
            alerts.extend((m, m.timestamp()[1]) for m in batch)
    consumer.close()
    return alerts


def _hops(settings: Settings, alerts: list[tuple[Any, int]], since_ms: int) -> Hops:
    """Each alert's source record gives the three latencies; alerts on records that reached
    Kafka before ``since_ms`` (an earlier feed's) are left out. The sources are read in one
    sequential pass per partition, from the lowest offset needed (a seek per alert costs a fetch
    round trip each)."""
    from confluent_kafka import TopicPartition

    from shared.avro import AvroDeserializer

    decode = AvroDeserializer("alert").decode
    wanted: dict[tuple[str, int], dict[int, list[int]]] = {}
    for message, alert_ms in alerts:
        alert = decode(message.value())
        key = (alert["source_topic"], alert["source_partition"])
        wanted.setdefault(key, {}).setdefault(alert["source_offset"], []).append(alert_ms)
    consumer = _consumer(settings, [])
    hops = Hops([], [], [])
    for (topic, partition), offsets in wanted.items():
        consumer.assign([TopicPartition(topic, partition, min(offsets))])
        last, position = max(offsets), -1
        while position < last:
            batch = consumer.consume(5000, timeout=5)
            if not batch:
                break
            for record in batch:
                if record.error() is not None:
                    continue
                position = record.offset()
                alerted = offsets.get(position)
                if alerted is None:
                    continue
                raw_ms = next(
                    (int(v) for k, v in record.headers() or [] if k == SOURCE_TIMESTAMP_HEADER),
                    None,
                )
                if raw_ms is None or raw_ms < since_ms:
                    continue
                records_ms = record.timestamp()[1]
                for alert_ms in alerted:  # one per detector that alerted on the record
                    hops.ingest.append(records_ms - raw_ms)
                    hops.detector.append(alert_ms - records_ms)
                    hops.total.append(alert_ms - raw_ms)
    consumer.close()
    return hops


def _consumer(settings: Settings, topics: list[str]) -> Any:
    from confluent_kafka import Consumer

    from shared.kafka.config import consumer_config

    group = f"bench-e2e-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(consumer_config(settings, group, **{"auto.offset.reset": "earliest"}))
    if topics:
        consumer.subscribe(topics)
    return consumer
