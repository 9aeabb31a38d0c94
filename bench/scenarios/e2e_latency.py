"""``e2e_latency``: raw record to alert through the whole embedded mesh, and where its CPU goes.

For each ingest mode a private mesh on the run's broker (its own MESH_HOME and topic prefix) is
started with `mesh up`, exactly as a user does: ingest, the metrics aggregator, the three
reference detectors, the notifier, InfluxDB and the trace backend when installed. `mesh up`
returns once the mesh can alert (:mod:`control.readiness`): its time is "ready to alert". Then
each of RUNS feeds the mesh at its rate for its duration, the first starting right at "ready"
as a user's would (issue 49: its first FIRST_S seconds are reported apart, and its first alert
says how soon after "ready" the mesh alerts; issue 29: 1 000 records/s for ten minutes, twenty
checkpoints of the real-time routing; 3 000 records/s), either as a customer's
system would (:mod:`bench.plain_feed`: a plain producer of JSON) or with the project's generator
(invalid records, three detectors' planted patterns); and the ramp (:mod:`bench.scenarios.e2e_ramp`)
finds the highest rate every stage keeps up with. ``MESH_BENCH_E2E_SCALE`` multiplies every
duration (0.2 for a quick look; 5 holds each ramp step the issue's five minutes).

Each run also draws its latency over time (:mod:`shared.latency_picture`: p50, p99 and max per 5 s
of raw-record time) to ``bench-results/e2e_<run>.svg`` and prints the same buckets as text, so a
spike every checkpoint interval shows as one.

Every alert of a paced feed is traced back through its source record: the raw record's Kafka
timestamp (the ``mesh.source.timestamp`` header ingest puts on the routed record), the routed
record's timestamp and the alert's. That gives raw -> records (ingest), records -> alert (the
detector hop) and raw -> alert, p50 / p99 / max, for every alert rather than a sample. The rate
actually sustained is what the mesh routed over the feed's duration, and the lag left when the
feed ended says whether it kept up.

Where the CPU goes (:mod:`bench.process_cpu`): every process on the machine is charged to a part
of the mesh; the table printed per run gives each part's CPU while the mesh idles (after the
first feed; the first run's table has no idle column) and while it works on a feed (from its
first record until its alerts have settled), in milliseconds per second and microseconds per raw
record.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from bench.notified import wait_notified
from bench.plain_feed import feed_plain
from bench.private_mesh import private_mesh
from bench.process_cpu import cpu_table, snapshot
from bench.result import Result, percentile
from bench.scenarios.e2e_ramp import HOLD_S as RAMP_HOLD_S
from bench.scenarios.e2e_ramp import routed_written, run_ramp
from shared.avro import AvroDeserializer
from shared.errors import MeshError
from shared.kafka.config import consumer_config
from shared.latency_picture import BUCKET_S, buckets, text_rows, write_svg
from shared.lineage import SOURCE_TIMESTAMP_HEADER
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka

#: Real-time routing only: micro-batch is the fallback (issue 20 measured it: it does not keep up
#: with 1 000 records/s on two cores), and a mode takes the whole run again.
MODE = "real-time"
#: (offered records/s, feed, seconds): the plain feed is the customer's system of issue 29.
RUNS = ((1000, "plain", 600), (1000, "generator", 120), (3000, "plain", 300))
PLAIN, GENERATOR = "plain", "generator"
#: After a feed: how long the alert count must stand still, and the longest wait for it.
QUIET_S, SETTLE_TIMEOUT_S = 10.0, 180.0
#: The longest wait for a run's alerts to be notified once they settled (bench.notified).
NOTIFY_SETTLE_S = 60.0
#: How long the started mesh is watched idling, for the idle column of the CPU table.
IDLE_S = 20.0
#: The first minutes of a feed, reported apart (issue 49's aim for a feed right after ready).
FIRST_S = 120.0


@dataclass
class Hops:
    """Per alert, in ms: raw -> records, records -> alert, raw -> alert; and when its raw
    record reached Kafka (epoch ms), for the latency-over-time picture."""

    ingest: list[float]
    detector: list[float]
    total: list[float]
    raw_at: list[int]


@dataclass(frozen=True)
class Idle:
    """What each part of the mesh used while idling, over ``seconds``."""

    cpu_s: dict[str, float]
    seconds: float


def scale() -> float:
    """``MESH_BENCH_E2E_SCALE``: every run's and ramp step's duration multiplied by it."""
    try:
        return max(0.01, float(os.environ.get("MESH_BENCH_E2E_SCALE", "1")))
    except ValueError:
        raise MeshError("MESH_BENCH_E2E_SCALE must be a number, such as 0.2 or 5") from None


def run_e2e(settings: Settings) -> list[Result]:
    return _run_mode(settings, MODE, scale())


def _run_mode(settings: Settings, mode: str, factor: float) -> list[Result]:
    results = []
    with private_mesh(settings, "e2e", MESH_INGEST_MODE=mode) as mesh:
        up_s, ready_ms = mesh.up(), int(time.time() * 1000)
        private = mesh.settings
        idle: Idle | None = None  # the first run starts right at "ready": idle comes after it
        for seed, (rate, feed, seconds) in enumerate(RUNS, start=1):
            results.append(_paced_run(private, mode, rate, seed, idle, feed, seconds * factor))
            idle = idle or _idle()
        first_at = results[0].extra["first_alert_at_ms"]  # 0: the run raised no alert
        first_alert_s = (first_at - ready_ms) / 1000 if first_at else -1.0
        for result in results:
            result.notes += (f"; mesh up took {up_s:.0f} s (until it said the mesh can alert); "
                             f"the first run's first alert came {first_alert_s:.1f} s "
                             "after")  # fmt: skip
            result.extra.update({"mesh_up_s": up_s, "first_alert_after_up_s": first_alert_s})
        results.extend(run_ramp(private, RAMP_HOLD_S * factor))
    return results


def _feed(rate: int, seconds: float, seed: int) -> StreamConfig:
    """Generated raw records with planted fraud; event time runs no faster than 2 000 records/s,
    so the customer population stays large enough for the generator's velocity guarantees."""
    return StreamConfig(start_time_ms=int(time.time() * 1000), count=int(rate * seconds),
                        seed=seed, invalid_share=0.01, event_rate=min(rate, 2000),
                        customers=100_000)  # fmt: skip


def _idle() -> Idle:
    """Each part's CPU while nothing is fed. The first IDLE_S after the first run are left out:
    the aggregator still takes in its metrics."""
    time.sleep(IDLE_S)
    before = snapshot()
    time.sleep(IDLE_S)
    after = snapshot()
    return Idle(after.since(before), after.taken_at - before.taken_at)


def _paced_run(
    settings: Settings,
    mode: str,
    rate: int,
    seed: int,
    idle: Idle | None,
    feed: str,
    seconds: float,
) -> Result:
    routed_before = routed_written(settings)
    feed_start_ms = int(time.time() * 1000)
    sent_at, cpu_before = time.monotonic(), snapshot()
    delivered = _send(settings, feed, rate, seconds, seed)
    send_s = time.monotonic() - sent_at

    routed_at_end = routed_written(settings)
    lag_at_end = delivered - (routed_at_end - routed_before)
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while routed_written(settings) - routed_before < delivered and time.monotonic() < deadline:
        time.sleep(1.0)
    alerts = [a for a in settled_alerts(settings) if a[1] >= feed_start_ms]
    cpu_after = snapshot()
    busy_s = cpu_after.taken_at - cpu_before.taken_at
    print(f"CPU of the mesh's parts, {mode} at {rate:,} records/s offered "
          f"({delivered:,} records; busy: from the feed's start until its alerts settled, "
          f"{busy_s:.0f} s):\n"
          + cpu_table(idle.cpu_s if idle else {}, idle.seconds if idle else 0.0,
                      cpu_after.since(cpu_before), busy_s, delivered), flush=True)  # fmt: skip
    hops = alert_hops(settings, alerts, feed_start_ms)
    name = f"e2e_{rate // 1000}k_{feed}"
    _draw(name, f"{name}: raw -> alert over the run ({delivered:,} records, "
          f"{len(hops.total):,} alerts)", hops)  # fmt: skip
    notified = wait_notified(
        settings.home, feed_start_ms, len(hops.total), QUIET_S, NOTIFY_SETTLE_S
    )
    routed = routed_written(settings)
    sustained = (routed_at_end - routed_before) / send_s
    first = [total for at, total in zip(hops.raw_at, hops.total, strict=True)
             if at < feed_start_ms + FIRST_S * 1000]  # fmt: skip
    parts = ", ".join(
        f"{hop} p50/p99/max {_ms(values, 50)}/{_ms(values, 99)}/{max(values, default=0):.0f}"
        for hop, values in (("raw->records", hops.ingest), ("records->alert", hops.detector),
                            (f"raw->notification of {len(notified)}", notified))
    )  # fmt: skip
    return Result(
        name,
        routed - routed_before,
        send_s,
        latency_p50_ms=percentile(hops.total, 50),
        latency_p99_ms=percentile(hops.total, 99),
        notes=(
            f"raw->alert of {len(hops.total)} alerts, max {max(hops.total, default=0):.0f} ms; "
            f"{parts}; first {FIRST_S / 60:.0f} min raw->alert p50/p99/max {_ms(first, 50)}/"
            f"{_ms(first, 99)}/{max(first, default=0):.0f} of {len(first)}; offered "
            f"{delivered / send_s:,.0f}/s, routed {sustained:,.0f}/s during the feed, "
            f"{lag_at_end:,} behind at its end"
        ),
        extra={
            "raw_to_alert_max_ms": max(hops.total, default=0.0),
            "first_minutes_raw_to_alert_p50_ms": percentile(first, 50) or 0.0,
            "first_minutes_raw_to_alert_p99_ms": percentile(first, 99) or 0.0,
            "first_minutes_raw_to_alert_max_ms": max(first, default=0.0),
            "raw_to_records_p50_ms": percentile(hops.ingest, 50) or 0.0,
            "raw_to_records_p99_ms": percentile(hops.ingest, 99) or 0.0,
            "records_to_alert_p50_ms": percentile(hops.detector, 50) or 0.0,
            "records_to_alert_p99_ms": percentile(hops.detector, 99) or 0.0,
            "raw_to_notification_p50_ms": percentile(notified, 50) or 0.0,
            "raw_to_notification_p99_ms": percentile(notified, 99) or 0.0,
            "raw_to_notification_max_ms": max(notified, default=0.0),
            "notifications": float(len(notified)),
            "routed_per_s": sustained,
            "first_alert_at_ms": float(min((at for _, at in alerts), default=0)),
            "lag_at_feed_end": float(lag_at_end),
        },
        paced=True,
    )


def _send(settings: Settings, feed: str, rate: int, seconds: float, seed: int) -> int:
    """Feed ``rate`` raw records a second for ``seconds``; how many were delivered."""
    if feed == PLAIN:
        topic = TopicNames.of(settings).raw("transactions")
        return feed_plain(settings, topic, rate, seconds, seed).delivered
    options = SendOptions(
        topic_prefix=TopicNames.of(settings).raw_family, rate=rate, progress=False
    )
    return produce_to_kafka(_feed(rate, seconds, seed), options, settings).delivered


def _draw(name: str, title: str, hops: Hops) -> None:
    """The run's latency over time: an SVG in bench-results/ and the same buckets as text."""
    series = buckets(hops.raw_at, hops.total)
    path = write_svg(PROJECT_ROOT / "bench-results" / f"{name}.svg", title, series)
    print(f"{title}, per {BUCKET_S:.0f} s of raw-record time (picture: {path}):\n"
          f"{text_rows(series)}", flush=True)  # fmt: skip


def _ms(values: list[float], q: float) -> str:
    found = percentile(values, q)
    return "-" if found is None else f"{found:.0f}"


def settled_alerts(settings: Settings) -> list[tuple[Any, int]]:
    """Every alert on the topic as (message, its Kafka timestamp), read once no new alert has
    come for QUIET_S seconds (the detectors are done with the feed)."""
    consumer = _consumer(settings, [TopicNames.of(settings).alerts])
    alerts: list[tuple[Any, int]] = []
    quiet_since, deadline = time.monotonic(), time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() - quiet_since < QUIET_S and time.monotonic() < deadline:
        batch = [m for m in consumer.consume(1000, timeout=0.5) if m.error() is None]
        if batch:
            quiet_since = time.monotonic()
            alerts.extend((m, m.timestamp()[1]) for m in batch)
    consumer.close()
    return alerts


def alert_hops(settings: Settings, alerts: list[tuple[Any, int]], since_ms: int) -> Hops:
    """Each alert's source record gives the three latencies; alerts on records that reached
    Kafka before ``since_ms`` (an earlier feed's) are left out. The sources are read in one
    sequential pass per partition, from the lowest offset needed (a seek per alert costs a fetch
    round trip each)."""

    decode = AvroDeserializer("alert").decode
    wanted: dict[tuple[str, int], dict[int, list[int]]] = {}
    for message, alert_ms in alerts:
        alert = decode(message.value())
        key = (alert["source_topic"], alert["source_partition"])
        wanted.setdefault(key, {}).setdefault(alert["source_offset"], []).append(alert_ms)
    consumer = _consumer(settings, [])
    hops = Hops([], [], [], [])
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
                    hops.raw_at.append(raw_ms)
    consumer.close()
    return hops


def _consumer(settings: Settings, topics: list[str]) -> Any:
    group = f"bench-e2e-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(consumer_config(settings, group, **{"auto.offset.reset": "earliest"}))
    if topics:
        consumer.subscribe(topics)
    return consumer
