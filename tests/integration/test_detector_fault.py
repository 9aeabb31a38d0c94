"""Fault test: two velocity instances under load, one SIGKILLed mid-run.

Afterwards every planted burst has its alert, no other record has one (state was restored: a
burst split by the kill is counted neither from zero nor twice), and duplicate alerts are few
and all come from what the killed instance had not committed: the records it processed since its
last commit (fewer than a batch: it commits every interval and once a batch's worth waits) and
the batch it was in, so fewer than two batches (REPLAY) past the committed offset.
"""

from __future__ import annotations

import collections
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.avro import AvroDeserializer
from shared.kafka.config import producer_config
from shared.settings import Settings
from testkit.detector_runs import DetectorProcess, produce_raw, read_topic
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import encoders, valid_records

pytestmark = pytest.mark.integration

PARTITIONS = 4
BATCH = 200
#: The most records a kill can make the group process again (see the module docstring).
REPLAY = 2 * BATCH
RATE = 5_000


def _committed(settings: Settings, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": group})
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in consumer.committed(parts, timeout=10)}
    finally:
        consumer.close()


def _owned(log: str, topic: str) -> set[int]:
    """Partitions of ``topic`` an instance held at the end of its log (assign/revoke lines)."""
    owned: set[int] = set()
    for verb, names in re.findall(r"(assigned|revoked) (.*)", log):
        parts = {int(p) for p in re.findall(re.escape(topic) + r"\[(\d+)\]", names)}
        owned = owned | parts if verb == "assigned" else owned - parts
    return owned


def _processed(log: str) -> int:
    found = re.findall(r"records=(\d+)", log)
    return int(found[-1]) if found else 0


def test_sigkill_of_one_of_two_velocity_instances_loses_no_alert_and_doubles_no_count(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    from confluent_kafka import Producer

    prefix = unique_name("kill") + "."
    source, alerts_topic = f"{prefix}records.transactions", f"{prefix}alerts"
    group = f"{prefix}detector.velocity"
    create_topics([source, alerts_topic, f"{prefix}detectors.dlq"], PARTITIONS)
    config = StreamConfig(
        start_time_ms=1_700_000_000_000,
        count=40_000,
        customers=20_000,
        event_rate=50.0,
        fraud_share=0.05,
        types=("transactions",),
        patterns=("velocity",),
    )
    feed = list(valid_records(config))
    expected = {r.record["record_id"] for r in feed if r.meta.alerts}
    members: dict[str, list[int]] = collections.defaultdict(list)
    for index, r in enumerate(feed):
        if r.meta.pattern_id:
            members[r.meta.pattern_id].append(index)
    encode = encoders()["transactions"].encode
    messages = [(encode(r.record), r.key) for r in feed]
    produced = [0]

    def feed_at_rate() -> None:
        producer = Producer(producer_config(mesh_settings, **{"linger.ms": 2}))
        begin = time.perf_counter()
        for i, (value, key) in enumerate(messages):
            pause = begin + i / RATE - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            produce_raw(producer, source, value, key)
            producer.poll(0)
            produced[0] = i + 1
        producer.flush(30)

    args = [
        "--topic-prefix", prefix, "--batch-size", str(BATCH), "--log-interval", "0.3",
        "--consumer-config", "session.timeout.ms=6000",
        "--consumer-config", "heartbeat.interval.ms=1000",
    ]  # fmt: skip
    with (
        DetectorProcess(mesh_settings, "detectors/velocity", args, tmp_path / "a.log") as victim,
        DetectorProcess(mesh_settings, "detectors/velocity", args, tmp_path / "b.log") as survivor,
    ):
        victim.wait_for_log(f"assigned {source}[")
        survivor.wait_for_log(f"assigned {source}[")
        feeder = threading.Thread(target=feed_at_rate, daemon=True)
        feeder.start()
        deadline = time.monotonic() + 60
        while produced[0] < 0.4 * len(messages) or _processed(victim.log_text()) == 0:
            assert time.monotonic() < deadline, victim.log_text()[-2000:]
            time.sleep(0.05)
        victim.kill()
        victim_partitions = _owned(victim.log_text(), source)
        produced_at_kill = produced[0]
        processed_by_victim = _processed(victim.log_text())
        committed_at_kill = _committed(mesh_settings, group, source)
        feeder.join(60)
        # Mid-run: the victim had done work, and records kept coming after it died.
        assert processed_by_victim > 0
        assert produced_at_kill < len(messages) == produced[0]
        deadline = time.monotonic() + 90
        while sum(max(o, 0) for o in _committed(mesh_settings, group, source).values()) < len(
            messages
        ):
            assert time.monotonic() < deadline, survivor.log_text()[-3000:]
            time.sleep(0.5)
        assert survivor.terminate() == 0
    survivor_log = survivor.log_text()

    decode = AvroDeserializer("alert").decode
    alerts = [decode(m.value()) for m in read_topic(mesh_settings, alerts_topic, timeout_s=5)]
    by_id = collections.Counter(a["alert_id"] for a in alerts)
    assert {a["source_record_id"] for a in alerts} == expected
    # At least one burst on the victim's partitions was split by the kill: its first records
    # were counted by the victim, the rest by the survivor from the restored windows.
    assert victim_partitions
    partition_of = {a["source_record_id"]: a["source_partition"] for a in alerts}
    straddling = [
        p
        for p in members.values()
        if p[0] < produced_at_kill <= p[-1]
        and partition_of[feed[p[-1]].record["record_id"]] in victim_partitions
    ]
    assert straddling, "at least one of the victim's bursts was split by the kill"

    # The survivor took the victim's partitions over and restored their state.
    restored = {
        int(p): int(n)
        for p, n in re.findall(
            re.escape(f"{prefix}detector.velocity.changelog") + r"\[(\d+)\]: (\d+) applied",
            survivor_log,
        )
    }
    assert victim_partitions <= set(restored), survivor_log[-3000:]
    assert all(restored[p] > 0 for p in victim_partitions)

    duplicates = [a for a in alerts if by_id[a["alert_id"]] > 1]
    for alert in duplicates:
        start = committed_at_kill[alert["source_partition"]]
        assert start <= alert["source_offset"] < start + REPLAY, (alert, committed_at_kill)
    assert len(alerts) - len(by_id) < REPLAY
    print(
        f"killed after {processed_by_victim} records; {len(straddling)} burst(s) split; "
        f"{len(alerts) - len(by_id)} duplicate alert(s); victim had {sorted(victim_partitions)}; "
        f"restored {restored}"
    )
