"""A raw topic created while the job routes in real-time mode is picked up.

The job runs as the real service (supervised, the auto master sized for the raw partitions it
found: local[4 + SIDE_SLOTS], a slot for each raw partition and the side queries' own). A new raw
topic with more partitions than real-time mode has slots for makes the job say so and exit; its
supervisor starts it again sized for the new count, and the new topic's records are routed
(here as dead letters: the type has no schema), as are the old ones'.
"""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Producer
from kafka_reading import read_all, records_in
from polling import wait_for

from control.launch.ingest import ingest_process, start_ingest
from control.supervised_service import supervised_child
from services.ingest.trigger_mode import SIDE_SLOTS
from shared.avro import AvroDeserializer

pytestmark = pytest.mark.integration


def test_a_raw_topic_beyond_the_slots_restarts_the_job_resized_and_is_routed(
    mesh_settings, unique_name, create_topics, tmp_path
):
    prefix = unique_name("grow")
    invalid = f"{prefix}.records.invalid"
    outputs = [f"{prefix}.records.transactions", invalid]
    create_topics([f"{prefix}.raw.transactions"], partitions=4)
    create_topics([*outputs, f"{prefix}.metrics.windows"], partitions=2)
    env = {
        "MESH_INGEST_RAW_PATTERN": re.escape(prefix) + r"\.raw\..*",
        "MESH_INGEST_RECORDS_PREFIX": f"{prefix}.records",
        "MESH_INGEST_INVALID_TOPIC": invalid,
        "MESH_INGEST_WINDOWS_TOPIC": f"{prefix}.metrics.windows",
        "MESH_INGEST_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "MESH_INGEST_CHECKPOINT_INTERVAL": "10 seconds",
    }
    producer = Producer({"bootstrap.servers": mesh_settings.bootstrap_servers})

    def send(topic: str, value: bytes) -> None:
        producer.produce(topic, value)
        assert producer.flush(30) == 0

    process = ingest_process(mesh_settings)
    _, started = start_ingest(mesh_settings, env)
    assert started
    try:
        send(f"{prefix}.raw.transactions", b"not json")
        wait_for(lambda: records_in(mesh_settings.bootstrap_servers, outputs) >= 1, 240,
                 "the first record routed")  # fmt: skip
        said = process.log_file.read_text()
        assert "routing runs real-time" in said
        assert f"(4 raw partitions, {4 + SIDE_SLOTS} task slots)" in said

        create_topics([f"{prefix}.raw.parcels"], partitions=4)
        send(f"{prefix}.raw.parcels", b'{"record_id": "p1"}')

        def restarted() -> bool:
            child = supervised_child(process)
            return child is not None and child.restarts == 1 and child.state == "running"

        wait_for(restarted, 120, "the job to restart for the new partitions")
        assert supervised_child(process).last_exit == "exit code 3"
        assert "raw partitions grew from 4 to 8" in process.log_file.read_text()
        resized = f"(8 raw partitions, {8 + SIDE_SLOTS} task slots)"
        wait_for(lambda: resized in process.log_file.read_text(), 120,
                 "the restarted job to size itself for 8 raw partitions")  # fmt: skip
        send(f"{prefix}.raw.transactions", b"[]")
        wait_for(lambda: records_in(mesh_settings.bootstrap_servers, outputs) >= 3, 240,
                 "the new topic's record and a later one routed")  # fmt: skip
    finally:
        process.stop()

    decode = AvroDeserializer("invalid_record")
    dead = [decode.decode(m.value()) for m in read_all(mesh_settings.bootstrap_servers,
                                                       [invalid], 3, timeout=30)]  # fmt: skip
    by_topic = {d["source_topic"].rsplit(".", 1)[1]: d["error_code"] for d in dead}
    assert by_topic.get("parcels") == "UNKNOWN_TYPE", dead
    assert sorted(d["error_code"] for d in dead if d["source_topic"].endswith("transactions")) == [
        "NOT_JSON",
        "NOT_OBJECT",
    ]
