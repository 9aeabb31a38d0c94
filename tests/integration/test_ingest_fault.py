"""Kill the ingest job with SIGKILL mid-stream: its supervisor restarts it, and nothing is lost.

The job runs as the real service (``python -m services.ingest.job`` under its supervisor, as
`mesh up` starts it), reading a backlog in small micro-batches so the kill lands between batches
of a run that is far from done. The supervisor restarts the job on its own (no one runs `mesh up`
again) and says it was killed; after the restart: every raw record routed at least once,
duplicates no more than one micro-batch (and reported), window counts exact.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer
from kafka_reading import records_in
from polling import wait_for

from services.ingest.service import ingest_process, start_ingest
from services.loadgen import SendOptions, StreamConfig, produce_to_kafka
from shared.avro import AvroDeserializer
from shared.supervised_service import supervised_child

pytestmark = pytest.mark.integration

BATCH = 1500


def read_all(bootstrap: str, topics: list[str], expected: int, timeout: float = 120.0):
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"read-{time.time()}",
         "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )  # fmt: skip
    consumer.subscribe(topics)
    messages: list = []
    deadline = time.monotonic() + timeout
    while len(messages) < expected and time.monotonic() < deadline:
        messages.extend(m for m in consumer.consume(2000, timeout=0.5) if m.error() is None)
    consumer.close()
    return messages


def test_sigkill_mid_stream_then_restart_routes_everything_and_counts_exactly(
    mesh_settings, unique_name, create_topics, tmp_path
):
    prefix = unique_name("kill")
    raw = [f"{prefix}.raw.transactions", f"{prefix}.raw.logins"]
    records = [f"{prefix}.records.transactions", f"{prefix}.records.logins"]
    invalid, windows = f"{prefix}.records.invalid", f"{prefix}.metrics.windows"
    create_topics(raw + records, partitions=8, config={"max.message.bytes": "4194304"})
    create_topics([invalid], partitions=4, config={"max.message.bytes": "4194304"})
    create_topics([windows], partitions=4, config={"cleanup.policy": "compact"})

    now = int(time.time() * 1000)
    stream = StreamConfig(start_time_ms=now - 30_000, count=12_000, seed=21, invalid_share=0.05,
                          event_rate=400, max_record_bytes=16 * 1024)  # fmt: skip
    report = produce_to_kafka(stream, SendOptions(topic_prefix=f"{prefix}.raw", progress=False),
                              mesh_settings)  # fmt: skip
    assert report.failed == 0
    total = report.delivered
    env = {
        "MESH_INGEST_RAW_PATTERN": re.escape(prefix) + r"\.raw\..*",
        "MESH_INGEST_RECORDS_PREFIX": f"{prefix}.records",
        "MESH_INGEST_INVALID_TOPIC": invalid,
        "MESH_INGEST_WINDOWS_TOPIC": windows,
        "MESH_INGEST_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "MESH_INGEST_MAX_OFFSETS_PER_TRIGGER": str(BATCH),
        "MESH_INGEST_MAX_RECORD_BYTES": str(16 * 1024),
    }
    process = ingest_process(mesh_settings)
    outputs = [*records, invalid]

    _, started = start_ingest(mesh_settings, env)
    assert started
    try:
        wait_for(lambda: records_in(mesh_settings.bootstrap_servers, outputs) >= 2 * BATCH,
                 180, "the first batches")  # fmt: skip
        job = supervised_child(process)
        assert job is not None and job.pid is not None and job.restarts == 0, job
        os.kill(job.pid, signal.SIGKILL)
        routed_at_kill = records_in(mesh_settings.bootstrap_servers, outputs)
        assert process.wait_gone(job.pid, 30), "the job survived SIGKILL"
        assert routed_at_kill < total, "the kill came after the input was drained"

        def restarted() -> bool:
            now = supervised_child(process)
            return now is not None and now.restarts == 1 and now.pid not in (None, job.pid)

        wait_for(restarted, 60, "the supervisor to restart the job")
        restart = supervised_child(process)
        assert restart is not None and restart.last_exit == "killed by SIGKILL"
        wait_for(lambda: records_in(mesh_settings.bootstrap_servers, outputs) >= total,
                 300, "the restarted job to drain the input")  # fmt: skip
        wait_for(_stable(lambda: records_in(mesh_settings.bootstrap_servers, outputs)),
                 120, "routing to finish")  # fmt: skip
        routed = records_in(mesh_settings.bootstrap_servers, outputs)
        messages = read_all(mesh_settings.bootstrap_servers, outputs, routed)
        assert len(messages) == routed
        window_messages = None

        def windows_complete() -> bool:
            nonlocal window_messages
            window_messages = _latest_windows(mesh_settings.bootstrap_servers, windows)
            return sum(w["count"] for w in window_messages.values()) >= total

        wait_for(windows_complete, 120, "the window counts to catch up")
    finally:
        process.stop()

    decode_invalid = AvroDeserializer("invalid_record")
    sources = Counter()
    for message in messages:
        if message.topic() == invalid:
            dead = decode_invalid.decode(message.value())
            coordinates = (
                f"{dead['source_topic']}:{dead['source_partition']}:{dead['source_offset']}"
            )
        else:
            coordinates = next(v.decode() for k, v in message.headers() if k == "mesh.source")
        sources[coordinates] += 1
    duplicates = sum(n - 1 for n in sources.values())
    print(f"routed {len(messages)} for {total} raw records: {duplicates} duplicates after the kill")
    assert len(sources) == total, "a raw record was never routed"
    assert duplicates <= 2 * BATCH, "more duplicates than the uncommitted batches can explain"
    counts = Counter()
    for window in window_messages.values():
        counts[window["status"]] += window["count"]
    assert sum(counts.values()) == total, f"window counts {dict(counts)} for {total} records"
    assert counts["INVALID"] == report.invalid


def _stable(count, quiet_s: float = 4.0):
    """A condition that holds once ``count()`` has not changed for ``quiet_s`` seconds."""
    state = {"value": None, "since": time.monotonic()}

    def check() -> bool:
        value = count()
        if value != state["value"]:
            state["value"], state["since"] = value, time.monotonic()
        return time.monotonic() - state["since"] >= quiet_s

    return check


def _latest_windows(bootstrap: str, topic: str) -> dict:
    decode = AvroDeserializer("window_count")
    latest = {}
    for message in read_all(bootstrap, [topic], expected=10**9, timeout=5):
        latest[message.key()] = decode.decode(message.value())
    return latest
