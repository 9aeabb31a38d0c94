"""The detector runtime as a real process against a real broker: stateless path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shared.json_files import read_json
from shared.kafka.config import admin_config, producer_config
from shared.kafka.inspect import watermarks
from shared.settings import Settings
from testkit.detector_runs import (
    DetectorProcess,
    produce_feed,
    produce_raw,
    read_topic,
)
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

pytestmark = pytest.mark.integration

START_MS = 1_700_000_000_000
PARTITIONS = 4


def _topics(prefix: str) -> dict[str, str]:
    return {
        "transactions": f"{prefix}records.transactions",
        "alerts": f"{prefix}alerts",
        "dlq": f"{prefix}detectors.dlq",
    }


def _committed_lag(settings: Settings, group: str, topic: str) -> int:
    """Records of ``topic`` not yet committed by ``group``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**admin_config(settings), "group.id": group})
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        lag = 0
        for tp in consumer.committed(parts, timeout=10):
            _, high = watermarks(consumer, tp, 10)
            lag += high - max(tp.offset, 0)
        return lag
    finally:
        consumer.close()


def transactions(count: int, customers: int, event_rate: float, fraud_share: float = 0.005):
    """Valid generated transactions (with their ground truth) from START_MS on."""
    config = StreamConfig(
        start_time_ms=START_MS,
        count=count,
        customers=customers,
        event_rate=event_rate,
        fraud_share=fraud_share,
        types=("transactions",),
    )
    return list(valid_records(config))


def test_large_amount_alerts_exactly_the_planted_records_and_dead_letters_a_corrupt_one(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    from confluent_kafka import Producer

    prefix = unique_name("rt") + "."
    names = _topics(prefix)
    create_topics([names["transactions"], names["alerts"], names["dlq"]], PARTITIONS)
    feed = transactions(count=6_000, customers=3_000, event_rate=50.0, fraud_share=0.02)
    expected = {
        r.record["record_id"] for r in feed for a in r.meta.alerts if a.detector == "large_amount"
    }
    assert len(expected) >= 10
    produce_feed(mesh_settings, {"transactions": names["transactions"]}, feed)
    producer = Producer(producer_config(mesh_settings))
    produce_raw(producer, names["transactions"], b'{"not": "avro"}', b"cus_corrupt")
    producer.flush(30)

    with DetectorProcess(
        mesh_settings,
        "detectors/large_amount",
        ["--topic-prefix", prefix, "--batch-size", "500"],
        tmp_path / "large_amount.log",
    ) as instance:
        alerts = read_topic(mesh_settings, names["alerts"], expect=len(expected), timeout_s=60)
        dead = read_topic(mesh_settings, names["dlq"], expect=1, timeout_s=30, idle_s=0.5)
        lag = _committed_lag(mesh_settings, f"{prefix}detector.large_amount", names["transactions"])
        assert instance.terminate() == 0
    log = instance.log_text()

    from shared.avro import AvroDeserializer

    decode = AvroDeserializer("alert").decode
    decoded = [decode(m.value()) for m in alerts]
    assert {a["source_record_id"] for a in decoded} == expected
    assert len(decoded) == len(expected), "no duplicates without a crash"
    assert all(m.key().decode() == a["customer_id"] for m, a in zip(alerts, decoded, strict=True))
    assert all(a["source_topic"] == names["transactions"] for a in decoded)

    [letter] = dead
    headers = {k: v.decode() for k, v in letter.headers()}
    assert letter.value() == b'{"not": "avro"}' and letter.key() == b"cus_corrupt"
    assert headers["mesh.error.stage"] == "decode"
    assert headers["mesh.error.class"] == "shared.avro.errors.NotSingleObjectError"
    assert headers["mesh.error.source.topic"] == names["transactions"]
    assert int(headers["mesh.error.source.offset"]) >= 0
    assert headers["mesh.error.instance.id"].startswith("large_amount-")
    assert int(headers["mesh.error.timestamp"]) > START_MS
    assert headers["mesh.error.message"]

    assert lag == 0, "every record, the corrupt one included, was committed"
    assert "leaving the group" in log and "dead_letters[decode=1]" in log


POISON_DETECTOR = """
from shared.detector import detector

@detector(name="poison", version="0.1.0", inputs=["transactions"])
def detect(record, ctx):
    if record["customer_id"] in {BAD}:
        raise ValueError("cannot handle " + record["record_id"])
    return [ctx.alert("seen", severity="LOW", score=1.0, reason="every record alerts")]
"""
POISON_MANIFEST = """
name: poison
version: 0.1.0
inputs: [transactions]
owner: tests
replicas: 1
start: earliest
"""


def _poison_detector(folder: Path, bad: set[str]) -> Path:
    folder.mkdir()
    (folder / "manifest.yaml").write_text(POISON_MANIFEST)
    (folder / "detector.py").write_text(POISON_DETECTOR.replace("{BAD}", repr(bad)))
    return folder


def test_exception_in_detect_is_dead_lettered_and_the_detector_goes_on(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("rt") + "."
    names = _topics(prefix)
    create_topics([names["transactions"], names["alerts"], names["dlq"]], PARTITIONS)
    feed = transactions(count=1_000, customers=500, event_rate=5.0)
    bad = {feed[3].record["customer_id"], feed[10].record["customer_id"]}
    failing = [r for r in feed if r.record["customer_id"] in bad]
    folder = _poison_detector(tmp_path / "poison", bad)
    produce_feed(mesh_settings, {"transactions": names["transactions"]}, feed)

    with DetectorProcess(
        mesh_settings, folder, ["--topic-prefix", prefix], tmp_path / "poison.log"
    ) as instance:
        alerts = read_topic(mesh_settings, names["alerts"], expect=len(feed) - len(failing))
        dead = read_topic(mesh_settings, names["dlq"], expect=len(failing), idle_s=0.5)
        assert instance.terminate() == 0

    assert len(alerts) == len(feed) - len(failing)
    assert sorted(m.key().decode() for m in dead) == sorted(
        r.record["customer_id"] for r in failing
    )
    headers = {k: v.decode() for k, v in dead[0].headers()}
    assert headers["mesh.error.stage"] == "detect"
    assert headers["mesh.error.class"] == "ValueError"
    assert headers["mesh.error.message"].startswith("cannot handle txn_")
    assert headers["mesh.error.detector"] == "poison"
    assert f"dead_letters[detect={len(failing)}]" in instance.log_text()


def test_a_detector_failing_on_every_record_stops_by_policy_after_committing(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("rt") + "."
    names = _topics(prefix)
    create_topics([names["transactions"], names["alerts"], names["dlq"]], PARTITIONS)
    feed = transactions(count=300, customers=200, event_rate=2.0)
    folder = _poison_detector(tmp_path / "poison", {r.record["customer_id"] for r in feed})
    produce_feed(mesh_settings, {"transactions": names["transactions"]}, feed)

    status_path = tmp_path / "poison.status.json"
    instance = DetectorProcess(
        mesh_settings,
        folder,
        [
            *("--topic-prefix", prefix, "--error-window", "100", "--batch-size", "50"),
            *("--status-file", str(status_path)),
        ],
        tmp_path / "poison.log",
    )
    code = instance.process.wait(60)
    instance.terminate()
    dead = read_topic(mesh_settings, names["dlq"], expect=100, timeout_s=10, idle_s=0.5)
    assert code == 3, instance.log_text()
    assert "--on-error-rate continue" in instance.log_text()
    # It stopped once the window was full (100 records, batches of 50), after committing them.
    assert 100 <= len(dead) < len(feed)
    assert _committed_lag(mesh_settings, f"{prefix}detector.poison", names["transactions"]) == (
        len(feed) - len(dead)
    )
    # The status file says why, for `mesh status` and the supervisor.
    status = read_json(status_path)
    assert status is not None
    assert status["state"] == "failed" and status["pid"] == instance.process.pid
    assert "records failed (threshold 50%): stopping" in status["last_error"]
    assert "\n" not in status["last_error"]
    assert status["records"] == status["dead_letters"] == status["failed_records"] == len(dead)
    assert status["error_rate"] == 1.0 and status["alerts"] == 0


def test_the_status_file_follows_the_instance_from_running_to_stopped(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("st") + "."
    names = _topics(prefix)
    create_topics([names["transactions"], names["alerts"], names["dlq"]], PARTITIONS)
    feed = transactions(count=2_000, customers=3_000, event_rate=50.0, fraud_share=0.05)
    expected = sum(1 for r in feed for a in r.meta.alerts if a.detector == "large_amount")
    produce_feed(mesh_settings, {"transactions": names["transactions"]}, feed)
    status_path = tmp_path / "instance" / "status.json"

    with DetectorProcess(
        mesh_settings,
        "detectors/large_amount",
        ["--topic-prefix", prefix, "--batch-size", "300", "--status-file", str(status_path)],
        tmp_path / "large_amount.log",
    ) as instance:
        running = instance.wait_for_status(
            status_path,
            lambda s: s["state"] == "running" and s["records"] == len(feed) and s["rebalances"],
        )
        later = instance.wait_for_status(status_path, lambda s: s["updated"] > running["updated"])
        assert instance.terminate() == 0
    stopped = read_json(status_path)
    assert stopped is not None

    assert running["detector"] == "large_amount" and running["version"] == "1.0.0"
    assert running["group"] == f"{prefix}detector.large_amount"
    assert running["instance_id"].startswith("large_amount-")
    assert running["pid"] == instance.process.pid
    assert running["assigned"] == [f"{names['transactions']}[{p}]" for p in range(PARTITIONS)]
    assert running["assignments"] >= 1 and running["revocations"] == 0
    assert running["rebalances"] >= 1
    assert running["alerts"] == expected
    assert running["dead_letters"] == running["failed_records"] == 0
    assert running["error_rate"] == 0.0 and running["last_error"] is None
    assert running["started"] <= running["updated"] < later["updated"], "refreshed while idle"

    assert stopped["state"] == "stopped" and stopped["last_error"] is None
    assert stopped["assigned"] == [] and stopped["revocations"] == PARTITIONS, "left the group"
    assert stopped["records"] == len(feed) and stopped["records_per_s"] == 0.0
    assert stopped["updated"] >= later["updated"]
    assert stopped["started"] == running["started"]
    assert [p.name for p in status_path.parent.iterdir()] == ["status.json"]


def test_unknown_input_topic_is_refused_in_one_line(
    mesh_settings: Settings, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    instance = DetectorProcess(
        mesh_settings,
        "detectors/large_amount",
        ["--topic-prefix", unique_name("none") + ".", "--topic-wait", "1"],
        tmp_path / "refused.log",
    )
    assert instance.process.wait(60) == 2
    instance.terminate()
    [line] = [x for x in instance.log_text().splitlines() if x.startswith("error:")]
    assert "records.transactions do not exist" in line


SLOW_DETECTOR = """
import time
from shared.detector import detector

@detector(name="slow", version="0.1.0", inputs=["transactions"])
def detect(record, ctx):
    time.sleep(0.01)
    return [ctx.alert("seen", severity="LOW", score=1.0, reason="every record alerts")]
"""


def test_a_slow_batch_hands_the_rest_back_instead_of_overrunning_the_poll_interval(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    from services.detector_runtime.config import RuntimeConfig, default_topics
    from services.detector_runtime.main import start
    from shared.detector import load_detector

    prefix = unique_name("slow") + "."
    names = _topics(prefix)
    create_topics([names["transactions"], names["alerts"], names["dlq"]], 2)
    feed = transactions(count=200, customers=200, event_rate=2.0)
    produce_feed(mesh_settings, {"transactions": names["transactions"]}, feed)
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "manifest.yaml").write_text(POISON_MANIFEST.replace("poison", "slow"))
    (folder / "detector.py").write_text(SLOW_DETECTOR)
    detector, manifest = load_detector(folder)
    runner = start(
        mesh_settings,
        RuntimeConfig(
            detector=detector,
            manifest=manifest,
            topics=default_topics(detector, prefix),
            group_id=f"{prefix}detector.slow",
            instance_id="slow-1",
            batch_size=100,
            max_batch_s=0.2,
        ),
    )
    runner.run(stop_when=lambda c: c.records >= len(feed))

    alerts = read_topic(mesh_settings, names["alerts"], expect=len(feed), timeout_s=20, idle_s=1)
    assert runner.counters.handed_back > 0, "batches were cut short"
    assert runner.counters.batches > len(feed) // 100
    assert runner.counters.records == len(feed)
    assert len(alerts) == len(feed), "each record processed exactly once despite the seeks"
