"""``mesh produce`` against a real broker: what arrives is exactly the dry-run stream."""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from control.cli import produce
from shared.errors import MeshError
from shared.kafka.config import consumer_config
from shared.settings import Settings
from tools.loadgen import (
    SendOptions,
    StreamConfig,
    generate,
    produce_to_kafka,
    read_ground_truth,
)

pytestmark = pytest.mark.integration

START_MS = 1_700_000_000_000
#: topic -> [(key, value)] in offset order (single-partition topics).
Messages = dict[str, list[tuple[bytes | None, bytes]]]


def _consume(settings: Settings, group: str, expected: dict[str, int]) -> Messages:
    """Every message of the expected topics (one partition each), read from the beginning."""
    consumer = Consumer(consumer_config(settings, group))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING) for topic in expected])
    received: Messages = defaultdict(list)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if all(len(received[t]) >= n for t, n in expected.items()):
                break
            for message in consumer.consume(1000, timeout=1.0):
                assert message.error() is None, message.error()
                topic, value = message.topic(), message.value()
                assert topic is not None and value is not None
                received[topic].append((message.key(), value))
    finally:
        consumer.close()
    return dict(received)


def _dry_run_stream(config: StreamConfig, prefix: str) -> tuple[Messages, dict[int, int]]:
    """The messages a run must send, by topic, and each stream index's offset in its topic."""
    by_topic: Messages = defaultdict(list)
    offset_of: dict[int, int] = {}
    for record in generate(config):
        messages = by_topic[f"{prefix}.{record.topic_suffix}"]
        offset_of[record.meta.index] = len(messages)
        messages.append((record.key, record.value))
    return dict(by_topic), offset_of


def test_produced_messages_equal_the_dry_run_stream_and_the_ground_truth(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., None],
    tmp_path: Path,
) -> None:
    prefix = unique_name("loadgen")
    create_topics([f"{prefix}.transactions", f"{prefix}.logins"], partitions=1)
    config = StreamConfig(
        start_time_ms=START_MS, count=4_000, seed=11, invalid_share=0.3, fraud_share=0.03
    )
    truth_path = tmp_path / "truth.jsonl"
    options = SendOptions(topic_prefix=prefix, ground_truth=truth_path, progress=False)

    report = produce_to_kafka(config, options, mesh_settings)

    assert report.ok, report.errors
    assert report.delivered == config.count
    assert report.invalid_kinds.get("oversized", 0) >= 1  # half a MiB each, yet delivered
    consumed = _consume(mesh_settings, unique_name("loadgen-check"), report.per_topic)
    assert {topic: len(messages) for topic, messages in consumed.items()} == report.per_topic
    expected, offset_of = _dry_run_stream(config, prefix)
    assert consumed == expected

    entries = read_ground_truth(truth_path)
    assert sum(e["entry"] == "alert" for e in entries) == report.expected_alerts > 0
    for entry in entries[1:]:
        key, value = consumed[entry["topic"]][offset_of[entry["index"]]]
        if entry["record_id"] is not None:
            assert entry["record_id"].encode() in value
        if entry["entry"] != "invalid":
            assert json.loads(value)["record_id"] == entry["record_id"]
            assert key == entry["customer_id"].encode()


def test_cli_produces_at_the_requested_rate(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    prefix = unique_name("loadgen")
    create_topics([f"{prefix}.transactions"], partitions=1)
    parser = argparse.ArgumentParser(prog="mesh")
    produce.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "produce",
            "--count=600",
            "--rate=400",
            "--types=transactions",
            f"--topic-prefix={prefix}",
            f"--start-time={START_MS}",
            "--no-progress",
        ]
    )

    started = time.monotonic()
    assert args.handler(args, mesh_settings) == 0
    elapsed = time.monotonic() - started

    assert elapsed >= 1.3  # 600 records at 400/s, less the token bucket's small burst
    out = capsys.readouterr().out
    assert f"{prefix}.transactions=600" in out
    assert (mesh_settings.home / "loadgen" / "ground-truth-seed42.jsonl").is_file()
    consumed = _consume(
        mesh_settings, unique_name("loadgen-check"), {f"{prefix}.transactions": 600}
    )
    assert len(consumed[f"{prefix}.transactions"]) == 600


def test_producing_to_missing_topics_fails_at_once_naming_them(
    mesh_settings: Settings, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    prefix = unique_name("loadgen-missing")
    config = StreamConfig(start_time_ms=START_MS, count=10)
    started = time.monotonic()
    with pytest.raises(MeshError, match=f"{prefix}.transactions"):
        produce_to_kafka(config, SendOptions(topic_prefix=prefix, progress=False), mesh_settings)
    assert time.monotonic() - started < 15
