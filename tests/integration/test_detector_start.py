"""Where a new detector starts reading: the manifest's ``start``, against a real broker.

A time starts each never-committed partition at its first record at or after that time (a
backfill), once: a restart continues from the committed offsets. The default, ``latest``, leaves
what was produced before the instance joined alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from shared.avro import AvroDeserializer
from shared.json_files import read_json
from shared.kafka.config import consumer_config, producer_config
from shared.settings import Settings
from testkit.detector_runs import DetectorProcess
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import FeedRecord, encoders, valid_records

pytestmark = pytest.mark.integration

PARTITIONS = 4
#: Record timestamps: the old records at T0 + i ms, the new ones from T1 (a whole second). Recent
#: ones: the broker's retention judges records by their timestamps.
T0 = (int(time.time()) - 7_200) * 1000
T1 = T0 + 3_600_000

EVERY_DETECTOR = """
from shared.detector import detector

@detector(name="every", version="0.1.0", inputs=["transactions"])
def detect(record, ctx):
    return [ctx.alert("seen", severity="LOW", score=1.0, reason="every record alerts")]
"""
MANIFEST = """
name: every
version: 0.1.0
inputs: [transactions]
owner: tests
replicas: 1
"""


def _detector(folder: Path, start: str | None) -> Path:
    folder.mkdir()
    manifest = MANIFEST + (f"start: {start}\n" if start else "")
    (folder / "manifest.yaml").write_text(manifest)
    (folder / "detector.py").write_text(EVERY_DETECTOR)
    return folder


def _feed(count: int) -> list[FeedRecord]:
    config = StreamConfig(
        start_time_ms=T0, count=2 * count, customers=5_000, event_rate=5.0, types=("transactions",)
    )
    records = list(valid_records(config))[:count]  # a few generated records are invalid
    assert len(records) == count
    return records


def _produce(
    settings: Settings,
    topic: str,
    records: list[FeedRecord],
    timestamp: Callable[[int], int] | None = None,
    partition: int | None = None,
) -> None:
    """Produce with explicit record timestamps (``timestamp(i)`` for the i-th) when given."""
    from confluent_kafka import Producer

    encode = encoders()["transactions"].encode
    producer = Producer(producer_config(settings))
    for i, r in enumerate(records):
        extra: dict[str, Any] = {}
        if timestamp is not None:
            extra["timestamp"] = timestamp(i)
        if partition is not None:
            extra["partition"] = partition
        producer.produce(topic, encode(r.record), r.key, **extra)
    assert producer.flush(30) == 0


class Alerts:
    """Every alert of a topic as it arrives, decoded: (source_record_id, source_partition)."""

    def __init__(self, settings: Settings, topic: str) -> None:
        import uuid

        from confluent_kafka import Consumer

        self._consumer = Consumer(consumer_config(settings, f"reader-{uuid.uuid4().hex[:8]}"))
        self._consumer.subscribe([topic])
        self._decode = AvroDeserializer("alert").decode
        self.seen: list[tuple[str, int]] = []

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for message in self._consumer.consume(1000, timeout=0.1):
                if message.error() is None:
                    alert = self._decode(message.value())
                    self.seen.append((alert["source_record_id"], alert["source_partition"]))

    def until(self, done: Callable[[], bool], timeout_s: float = 30.0, idle_s: float = 2.0) -> None:
        """Poll until ``done()``, then ``idle_s`` more to catch anything extra."""
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"{len(self.seen)} alerts so far"
            self.poll(0.2)
        self.poll(idle_s)

    def ids(self) -> list[str]:
        return [record_id for record_id, _ in self.seen]

    def close(self) -> None:
        self._consumer.close()


@pytest.fixture
def topics(
    unique_name: Callable[[str], str], create_topics: Callable[..., list[str]]
) -> dict[str, str]:
    prefix = unique_name("start") + "."
    names = {
        "prefix": prefix,
        "transactions": f"{prefix}records.transactions",
        "alerts": f"{prefix}alerts",
        "dlq": f"{prefix}detectors.dlq",
    }
    create_topics([names["transactions"], names["alerts"], names["dlq"]], PARTITIONS)
    return names


@pytest.fixture
def alerts(mesh_settings: Settings, topics: dict[str, str]) -> Iterator[Alerts]:
    reader = Alerts(mesh_settings, topics["alerts"])
    yield reader
    reader.close()


@pytest.mark.parametrize(
    "strategy",
    [
        "cooperative-sticky",  # incremental_assign of the new partitions
        "range",  # eager (a stateful detector with several inputs): assign of all of them
    ],
)
def test_a_start_time_backfills_from_that_moment_once_then_continues_from_the_commit(
    strategy: str,
    mesh_settings: Settings,
    topics: dict[str, str],
    alerts: Alerts,
    tmp_path: Path,
) -> None:
    feed = _feed(110)
    old, new, late = feed[:50], feed[50:100], feed[100:]
    _produce(mesh_settings, topics["transactions"], old, lambda i: T0 + i)
    _produce(mesh_settings, topics["transactions"], new, lambda i: T1 + i)
    start = datetime.fromtimestamp(T1 / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    folder = _detector(tmp_path / "every", start)  # unquoted: YAML reads a datetime
    status_path = tmp_path / "status.json"
    args = [
        *("--topic-prefix", topics["prefix"], "--status-file", str(status_path)),
        *("--consumer-config", f"partition.assignment.strategy={strategy}"),
    ]

    with DetectorProcess(mesh_settings, folder, args, tmp_path / "first.log") as first:
        first.wait_for_status(status_path, lambda s: s["records"] >= len(new))
        alerts.until(lambda: len(alerts.seen) >= len(new))
        assert first.terminate() == 0
    assert sorted(alerts.ids()) == sorted(r.record["record_id"] for r in new)
    stopped = read_json(status_path)
    assert stopped is not None and stopped["records"] == len(new)
    assert stopped["state"] == "stopped"
    assert "never committed, starting at the manifest's time" in first.log_text()

    # Older than the manifest's time, but after the commit: a restart reads them.
    _produce(mesh_settings, topics["transactions"], late, lambda i: T0 - 60_000 + i)
    with DetectorProcess(mesh_settings, folder, args, tmp_path / "second.log") as second:
        second.wait_for_status(status_path, lambda s: s["records"] >= len(late))
        alerts.until(lambda: len(alerts.seen) >= len(new) + len(late))
        assert second.terminate() == 0
    assert sorted(alerts.ids()) == sorted(r.record["record_id"] for r in new + late)
    assert "starting at the manifest's time" not in second.log_text()


def test_a_start_time_past_the_last_record_starts_at_the_end(
    mesh_settings: Settings, topics: dict[str, str], alerts: Alerts, tmp_path: Path
) -> None:
    feed = _feed(60)
    before, after = feed[:50], feed[50:]
    _produce(mesh_settings, topics["transactions"], before, lambda i: T0 + i)
    tomorrow = datetime.now(timezone(timedelta(hours=1))) + timedelta(days=1)
    folder = _detector(tmp_path / "every", f"'{tomorrow.isoformat(timespec='seconds')}'")
    status_path = tmp_path / "status.json"
    args = ["--topic-prefix", topics["prefix"], "--status-file", str(status_path)]

    with DetectorProcess(mesh_settings, folder, args, tmp_path / "every.log") as instance:
        instance.wait_for_status(status_path, lambda s: len(s["assigned"]) == PARTITIONS)
        # The end offsets were fixed in the assign callback, before the file showed partitions.
        _produce(mesh_settings, topics["transactions"], after, lambda i: T0 + 100 + i)
        alerts.until(lambda: len(alerts.seen) >= len(after))
        assert instance.terminate() == 0
    assert sorted(alerts.ids()) == sorted(r.record["record_id"] for r in after)


def test_latest_by_default_leaves_what_was_produced_before_the_instance_joined(
    mesh_settings: Settings, topics: dict[str, str], alerts: Alerts, tmp_path: Path
) -> None:
    feed = _feed(200)
    before, after, spare = feed[:50], feed[50:100], iter(feed[100:])
    _produce(mesh_settings, topics["transactions"], before)
    folder = _detector(tmp_path / "every", None)
    status_path = tmp_path / "status.json"

    with DetectorProcess(
        mesh_settings,
        folder,
        ["--topic-prefix", topics["prefix"], "--status-file", str(status_path)],
        tmp_path / "every.log",
    ) as instance:
        instance.wait_for_status(status_path, lambda s: len(s["assigned"]) == PARTITIONS)
        # `latest` is resolved by the client shortly after the assignment: probe every partition
        # until each has been read, so that everything produced next is after the start.
        probes: list[str] = []
        deadline = time.monotonic() + 30
        while {p for _, p in alerts.seen} != set(range(PARTITIONS)):
            assert time.monotonic() < deadline, instance.log_text()[-3000:]
            for partition in range(PARTITIONS):
                probe = next(spare)
                probes.append(probe.record["record_id"])
                _produce(mesh_settings, topics["transactions"], [probe], partition=partition)
            alerts.poll(0.5)
        _produce(mesh_settings, topics["transactions"], after)
        after_ids = {r.record["record_id"] for r in after}
        alerts.until(lambda: after_ids <= set(alerts.ids()))
        status = instance.wait_for_status(status_path, lambda s: s["records"] == len(alerts.seen))
        assert instance.terminate() == 0

    seen = alerts.ids()
    assert not {r.record["record_id"] for r in before} & set(seen), "nothing from before"
    assert sorted(seen) == sorted(after_ids | (set(probes) & set(seen)))
    assert len(seen) == len(set(seen)) == status["records"]
