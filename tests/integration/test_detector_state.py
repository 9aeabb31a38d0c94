"""Detector state against a real broker: changelog, restore by committed offset, co-partitioning."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.detector_runtime.config import RuntimeConfig, default_topics
from services.detector_runtime.main import start
from shared.avro import AvroDeserializer
from shared.detector import load_detector
from shared.settings import Settings
from testkit.detector_runs import DetectorProcess, produce_feed, read_topic
from tools.loadgen.avro_feed import FeedRecord, to_avro_record
from tools.loadgen.generated import RecordMeta

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


def _txn(customer: str, i: int, at: int) -> FeedRecord:
    raw = {
        "record_id": f"txn_{customer}_{i}",
        "customer_id": customer,
        "event_time": at,
        "amount": 12.5,
        "currency": "EUR",
        "merchant_id": "m1",
        "country": "DE",
    }
    meta = RecordMeta(i, "transactions", raw["record_id"], customer, at)
    return FeedRecord("transactions", customer.encode(), to_avro_record("transactions", raw), meta)


def _alerts(settings: Settings, topic: str, expect: int, timeout_s: float = 20) -> list[Any]:
    decode = AvroDeserializer("alert").decode
    messages = read_topic(settings, topic, expect=expect, timeout_s=timeout_s, idle_s=1.5)
    return [decode(m.value()) for m in messages]


def _burst(customer: str, first: int, count: int) -> list[FeedRecord]:
    """``count`` transactions one second apart, numbered from ``first``."""
    return [_txn(customer, i, T0 + i * 1_000) for i in range(first, first + count)]


def test_restart_continues_window_counts_neither_from_zero_nor_doubled(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("st") + "."
    source = f"{prefix}records.transactions"
    create_topics([source, f"{prefix}alerts", f"{prefix}detectors.dlq"], 2)
    args = ["--topic-prefix", prefix, "--batch-size", "100"]

    produce_feed(mesh_settings, {"transactions": source}, _burst("cus_a", 0, 3))
    with DetectorProcess(mesh_settings, "detectors/velocity", args, tmp_path / "1.log") as first:
        _alerts(mesh_settings, f"{prefix}alerts", expect=0, timeout_s=3)
        _wait_committed(mesh_settings, f"{prefix}detector.velocity", source, 3)
        assert first.terminate() == 0

    # Record 4 must not alert (3 restored + 1 = 4; doubled would be 7), record 5 must (5; from
    # zero it would be 2).
    produce_feed(mesh_settings, {"transactions": source}, _burst("cus_a", 3, 2))
    with DetectorProcess(mesh_settings, "detectors/velocity", args, tmp_path / "2.log") as second:
        alerts = _alerts(mesh_settings, f"{prefix}alerts", expect=1)
        assert second.terminate() == 0
    assert [a["source_record_id"] for a in alerts] == ["txn_cus_a_4"]
    assert alerts[0]["evidence"]["count"] == "5"
    assert "restored" in second.log_text() and "0 applied" not in second.log_text()


def _wait_committed(settings: Settings, group: str, topic: str, total: int) -> None:
    import time

    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": group})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            parts = consumer.committed([TopicPartition(topic, p) for p in range(2)], timeout=10)
            if sum(max(tp.offset, 0) for tp in parts) >= total:
                return
            time.sleep(0.2)
        raise AssertionError(f"{group} did not commit {total} records of {topic}")
    finally:
        consumer.close()


def _runtime_config(prefix: str, target: str, instance: str) -> RuntimeConfig:
    detector, manifest = load_detector(target)
    return RuntimeConfig(
        detector=detector,
        manifest=manifest,
        topics=default_topics(detector, prefix),
        group_id=f"{prefix}detector.{detector.name}",
        instance_id=instance,
        batch_size=100,
        batch_wait_s=0.5,
    )


def test_updates_of_a_batch_that_crashed_before_its_commit_are_ignored_on_restore(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
) -> None:
    prefix = unique_name("cr") + "."
    source = f"{prefix}records.transactions"
    create_topics([source, f"{prefix}alerts", f"{prefix}detectors.dlq"], 1)
    produce_feed(mesh_settings, {"transactions": source}, _burst("cus_b", 0, 4))

    crashing = start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "crashing"))

    def crash(offsets: object) -> None:
        raise RuntimeError("simulated crash after the changelog was acknowledged")

    crashing._commit = crash  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="simulated crash"):
        crashing.run(max_batches=1)
    assert crashing.counters.records == 4 and crashing.counters.changelog >= 1
    changelog = read_topic(
        mesh_settings, f"{prefix}detector.velocity.changelog", expect=1, timeout_s=10, idle_s=0.5
    )
    assert changelog, "the crashed batch's state update reached the changelog"

    produce_feed(mesh_settings, {"transactions": source}, _burst("cus_b", 4, 1))
    survivor = start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "survivor"))
    survivor.run(max_batches=1)
    alerts = _alerts(mesh_settings, f"{prefix}alerts", expect=1)
    assert [r.ignored for r in survivor.restores] == [len(changelog)]
    assert [r.applied for r in survivor.restores] == [0]
    assert survivor.counters.records == 5
    assert [a["source_record_id"] for a in alerts] == ["txn_cus_b_4"]
    assert alerts[0]["evidence"]["count"] == "5"


def _routed(
    settings: Settings, topic: str, customer: str, raw_offsets: list[int], raw: str
) -> None:
    """Transactions of ``customer`` as ingest routes them: each names its raw source (``raw``
    partition, offset; the raw timestamp follows the offset) in the lineage headers."""
    from confluent_kafka import Producer

    from shared.kafka.config import producer_config
    from shared.lineage import SOURCE_HEADER, SOURCE_TIMESTAMP_HEADER
    from testkit.detector_runs import produce_raw
    from tools.loadgen.avro_feed import encoders

    encode, producer = encoders()["transactions"], Producer(producer_config(settings))
    for offset in raw_offsets:
        record = _txn(customer, offset, T0 + offset * 1_000)
        headers = [(SOURCE_HEADER, f"{raw}:{offset}".encode()),
                   (SOURCE_TIMESTAMP_HEADER, str(T0 + offset).encode())]  # fmt: skip
        produce_raw(producer, topic, encode.encode(record.record), record.key, headers)
    assert producer.flush(30) == 0


def test_records_a_restarted_ingest_routes_again_are_counted_once_across_a_restart(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
) -> None:
    """Ingest killed after routing raw offsets 0..3 restarts from its checkpoint (2) and routes
    2 and 3 again, then 4. velocity must count five transactions, not seven (it alerted on 2, 3
    and 4 before the replay guard), and the detector's own restart in between must keep what it
    had counted (the guard's marks restored from the changelog)."""
    prefix = unique_name("rg") + "."
    source = f"{prefix}records.transactions"
    create_topics([source, f"{prefix}alerts", f"{prefix}detectors.dlq"], 1)
    _routed(mesh_settings, source, "cus_r", [0, 1, 2, 3], "raw.transactions:5")
    first = start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "first"))
    first.run(max_batches=1)
    assert (first.counters.records, first.counters.replayed) == (4, 0)

    _routed(mesh_settings, source, "cus_r", [2, 3, 4], "raw.transactions:5")
    second = start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "second"))
    second.run(max_batches=1)
    alerts = _alerts(mesh_settings, f"{prefix}alerts", expect=1)
    assert (second.counters.records, second.counters.replayed) == (3, 2)
    assert [a["source_record_id"] for a in alerts] == ["txn_cus_r_4"]
    assert alerts[0]["evidence"]["count"] == "5"
    assert second.progress().replayed == 2  # the status file's and `mesh status`'s figure


def test_every_assigned_partition_is_restored_to_its_own_state_in_one_read(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
) -> None:
    """The restore reads all newly assigned partitions at once: each update must still land in
    the state of the partition it was written for, and every partition must come back."""
    prefix = unique_name("mp") + "."
    source = f"{prefix}records.transactions"
    create_topics([source, f"{prefix}alerts", f"{prefix}detectors.dlq"], 4)
    customers = [f"cus_{n:02d}" for n in range(16)]
    feed = [record for customer in customers for record in _burst(customer, 0, 3)]
    produce_feed(mesh_settings, {"transactions": source}, feed)

    first = start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "first"))
    before = _run_keeping_state(first, len(feed))
    assert len([state for state in before.values() if state]) >= 2

    produce_feed(mesh_settings, {"transactions": source}, _burst("cus_00", 10, 1))
    second = start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "second"))
    after = _run_keeping_state(second, 1)
    restored = {stats.partition: stats.applied for stats in second.restores}
    assert sorted(restored) == [0, 1, 2, 3]
    # Every update the first instance wrote is below its committed offsets: all apply.
    assert sum(restored.values()) == first.counters.changelog >= len(customers)
    late = next(number for number, state in after.items() if ("cus_00", T0 + 10_000) in state)
    for number, state in before.items():
        if number != late:
            assert after[number] == state, number
        else:  # the late record added a bucket of its own to what was restored
            assert set(state.items()) < set(after[number].items())


def _run_keeping_state(runner: Any, records: int) -> dict[int, dict[Any, Any]]:
    """Run ``runner`` until it has processed ``records``; its tasks' window buckets as they were
    then (leaving the group drops them)."""
    state: dict[int, dict[Any, Any]] = {}

    def done(counters: Any) -> bool:
        if counters.records < records:
            return False
        for number, task in runner._tasks.items():
            state[number] = task.state.snapshot()["transactions"]
        return True

    runner.run(stop_when=done)
    return state


def test_ttl_expiry_writes_tombstones_to_the_changelog(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
) -> None:
    prefix = unique_name("ttl") + "."
    source = f"{prefix}records.transactions"
    create_topics([source, f"{prefix}alerts", f"{prefix}detectors.dlq"], 1)
    produce_feed(mesh_settings, {"transactions": source}, _burst("cus_c", 0, 2))
    start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "a")).run(max_batches=1)
    # Two minutes later, cus_c's buckets are past the window and its grace: tombstones, written
    # by the next instance, which restored them first.
    produce_feed(mesh_settings, {"transactions": source}, [_txn("cus_d", 9, T0 + 200_000)])
    runner = start(mesh_settings, _runtime_config(prefix, "detectors.velocity", "b"))
    runner.run(max_batches=1)
    assert runner.restores[0].applied >= 1
    messages = read_topic(
        mesh_settings, f"{prefix}detector.velocity.changelog", expect=3, timeout_s=10, idle_s=0.5
    )
    history: dict[str, list[Any]] = {}
    for m in messages:
        history.setdefault(json.loads(m.key())[1], []).append(m.value())
    assert history["cus_c"][0] is not None and history["cus_c"][-1] is None
    assert history["cus_d"][-1] is not None
    headers = dict(messages[-1].headers())
    assert headers["mesh.source.topic"] == source.encode()


def test_stateful_detector_refuses_inputs_that_are_not_copartitioned(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("cp") + "."
    create_topics([f"{prefix}records.transactions"], 2)
    create_topics([f"{prefix}records.logins"], 3)
    instance = DetectorProcess(
        mesh_settings, "detectors/new_country", ["--topic-prefix", prefix], tmp_path / "cp.log"
    )
    assert instance.process.wait(60) == 2
    instance.terminate()
    lines = [line for line in instance.log_text().splitlines() if line.startswith("error:")]
    assert len(lines) == 1
    assert "must be co-partitioned" in lines[0]
    assert f"{prefix}records.transactions has 2" in lines[0]
    assert f"{prefix}records.logins has 3" in lines[0]


def test_new_country_joins_co_partitioned_transactions_and_logins(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    from tools.loadgen import StreamConfig
    from tools.loadgen.avro_feed import valid_records

    prefix = unique_name("nc") + "."
    inputs = {t: f"{prefix}records.{t}" for t in ("transactions", "logins")}
    create_topics([*inputs.values(), f"{prefix}alerts", f"{prefix}detectors.dlq"], 3)
    config = StreamConfig(
        start_time_ms=T0, count=8_000, customers=2_000, event_rate=20.0, fraud_share=0.03,
        patterns=("new_country",),
    )  # fmt: skip
    feed = list(valid_records(config))
    expected = {r.record["record_id"] for r in feed if r.meta.alerts}
    assert {r.record_type for r in feed if r.meta.alerts} == {"transactions", "logins"}
    produce_feed(mesh_settings, inputs, feed)
    with DetectorProcess(
        mesh_settings, "detectors/new_country", ["--topic-prefix", prefix], tmp_path / "nc.log"
    ) as instance:
        alerts = _alerts(mesh_settings, f"{prefix}alerts", expect=len(expected), timeout_s=60)
        assert instance.terminate() == 0
    assert {a["source_record_id"] for a in alerts} == expected
    assert "assigned" in instance.log_text()
