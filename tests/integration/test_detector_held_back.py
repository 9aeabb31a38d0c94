"""Degrade, never stop (issue 48): output that cannot be delivered holds back only the input
partition it came from, as a real detector process on the suite's broker shows.

One broker cannot lose one partition's leader and keep the others, so the alerts topic is made
to refuse every write the way a leaderless partition does: ``min.insync.replicas`` 2 on one
replica, so an acks=all produce waits (NOT_ENOUGH_REPLICAS, retried) until the delivery timeout,
exactly what a message to a partition without a leader does. Only input partition 1 has planted
frauds, so only its alerts fail: it must be held back (status file, uncommitted) while partitions
0, 2 and 3 are committed to their end, and the process must not exit. Then the topic takes writes
again (``min.insync.replicas`` 1, as a leader coming back) and every planted alert arrives, each
once at least, partition 1 committed to its end. On a real 3-node cluster with a broker lost:
chaos case 20, `cluster_leaderless_alerts` (docs/reliability.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from shared.avro import AvroDeserializer
from shared.kafka.config import admin_config
from shared.kafka.inspect import watermarks
from shared.kafka.partitioner import partition_for
from shared.settings import Settings
from testkit.detector_runs import DetectorProcess, produce_feed, read_topic
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

pytestmark = pytest.mark.integration

PARTITIONS = 4
HELD = 1  # the only input partition with planted frauds


def _uncommitted(settings: Settings, group: str, topic: str) -> dict[int, int]:
    """Per partition of ``topic``, records ``group`` has not committed."""
    consumer = Consumer({**admin_config(settings), "group.id": group})
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {
            tp.partition: watermarks(consumer, tp, 10)[1] - max(tp.offset, 0)
            for tp in consumer.committed(parts, timeout=10)
        }
    finally:
        consumer.close()


def _min_insync(settings: Settings, topic: str, value: int) -> None:
    admin = AdminClient(admin_config(settings))
    entry = ConfigEntry("min.insync.replicas", str(value),
                        incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _wait(what: str, check: Callable[[], bool], instance: DetectorProcess, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while not check():
        assert instance.process.poll() is None, f"the detector exited:\n{instance.log_text()}"
        assert time.monotonic() < deadline, f"{what} within {timeout_s} s:\n{instance.log_text()}"
        time.sleep(0.5)


def test_undeliverable_alerts_hold_back_only_their_input_partition(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("held") + "."
    records, alerts, dlq = (f"{prefix}records.transactions", f"{prefix}alerts",
                            f"{prefix}detectors.dlq")  # fmt: skip
    create_topics([records, dlq], PARTITIONS)
    create_topics([alerts], PARTITIONS, {"min.insync.replicas": "2"})
    config = StreamConfig(start_time_ms=1_700_000_000_000, count=4_000, customers=2_000,
                          event_rate=50.0, fraud_share=0.03, types=("transactions",))  # fmt: skip

    def partition(item) -> int:
        return partition_for(item.record["customer_id"].encode(), PARTITIONS)

    def planted(item) -> bool:
        return any(a.detector == "large_amount" for a in item.meta.alerts)

    feed = [r for r in valid_records(config) if not planted(r) or partition(r) == HELD]
    expected = {r.record["record_id"] for r in feed if planted(r)}
    assert len(expected) >= 5 and {partition(r) for r in feed} == set(range(PARTITIONS))
    produce_feed(mesh_settings, {"transactions": records}, feed)
    group = f"{prefix}detector.large_amount"
    status = tmp_path / "status.json"

    with DetectorProcess(
        mesh_settings,
        "detectors/large_amount",
        ["--topic-prefix", prefix, "--delivery-timeout-ms", "2000", "--status-file", str(status)],
        tmp_path / "large_amount.log",
    ) as instance:
        held = instance.wait_for_status(status, lambda s: bool(s.get("waiting")), timeout_s=60)
        assert held["waiting"][0].startswith(f"{records}[{HELD}] waits for {alerts}[")
        _wait("partitions 0, 2 and 3 committed to their end while 1 is held back",
              lambda: [n for n, lag in _uncommitted(mesh_settings, group, records).items()
                       if lag] == [HELD], instance, timeout_s=60)  # fmt: skip

        _min_insync(mesh_settings, alerts, 1)  # the partitions take writes again
        found = read_topic(mesh_settings, alerts, expect=len(expected), timeout_s=90)
        _wait("partition 1 committed to its end",
              lambda: not any(_uncommitted(mesh_settings, group, records).values()),
              instance, timeout_s=60)  # fmt: skip
        assert instance.terminate() == 0
    decode = AvroDeserializer("alert").decode
    assert {decode(m.value())["source_record_id"] for m in found} >= expected
    log = instance.log_text()
    assert f"partition {HELD} waits" in log and "taken back" in log
