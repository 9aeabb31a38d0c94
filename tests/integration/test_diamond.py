"""The diamond's first two stages together: raw JSON -> ingest (Spark) -> detectors -> alerts.

Generated raw records with planted fraud go through the real ingest job; the three reference
detectors then run as separate services on ingest's output, and must alert on exactly the
planted records of the generator's ground truth: nothing missed, nothing extra.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict

import pytest
from kafka_reading import run_ingest

from services.ingest.config import IngestConfig
from shared.avro import AvroDeserializer
from testkit.detector_runs import DetectorProcess, read_topic
from tools.loadgen import SendOptions, StreamConfig, generate, produce_to_kafka

pytestmark = pytest.mark.integration

DETECTORS = ("large_amount", "velocity", "new_country")


def test_planted_fraud_in_raw_json_comes_out_as_exactly_the_expected_alerts(
    spark, mesh_settings, unique_name, create_topics, tmp_path
):
    prefix = unique_name("diamond")
    keyed = ["raw.transactions", "raw.logins", "records.transactions", "records.logins", "alerts"]
    create_topics([f"{prefix}.{name}" for name in keyed], partitions=4,
                  config={"max.message.bytes": "4194304"})  # fmt: skip
    create_topics([f"{prefix}.records.invalid", f"{prefix}.detectors.dlq"], partitions=2,
                  config={"max.message.bytes": "4194304"})  # fmt: skip
    create_topics([f"{prefix}.metrics.windows"], partitions=2, config={"cleanup.policy": "compact"})

    stream = StreamConfig(start_time_ms=int(time.time() * 1000) - 120_000, count=8000, seed=8,
                          customers=3000, event_rate=60.0, fraud_share=0.03, invalid_share=0.03,
                          max_record_bytes=16 * 1024)  # fmt: skip
    expected: dict[str, set[str]] = defaultdict(set)
    for record in generate(stream):
        for alert in record.meta.alerts:
            expected[alert.detector].add(record.meta.record_id)
    assert all(len(expected[name]) >= 3 for name in DETECTORS), dict(expected)
    report = produce_to_kafka(stream, SendOptions(topic_prefix=f"{prefix}.raw", progress=False),
                              mesh_settings)  # fmt: skip
    assert report.failed == 0

    config = IngestConfig(
        raw_pattern=re.escape(prefix) + r"\.raw\..*",
        records_prefix=f"{prefix}.records",
        invalid_topic=f"{prefix}.records.invalid",
        windows_topic=f"{prefix}.metrics.windows",
        checkpoint_dir=tmp_path / "checkpoints",
        max_record_bytes=16 * 1024,
        allowed_lateness_ms=600_000,
    )
    run_ingest(spark, mesh_settings, config)

    processes = [
        DetectorProcess(
            mesh_settings,
            f"detectors/{name}",
            ["--topic-prefix", f"{prefix}."],
            tmp_path / f"{name}.log",
        )
        for name in DETECTORS
    ]
    try:
        total = sum(len(expected[name]) for name in DETECTORS)
        alerts = read_topic(mesh_settings, f"{prefix}.alerts", expect=total, timeout_s=120)
    finally:
        for process in processes:
            assert process.terminate() == 0, process.log_text()[-2000:]

    decode = AvroDeserializer("alert").decode
    got: dict[str, set[str]] = defaultdict(set)
    for message in alerts:
        alert = decode(message.value())
        got[alert["detector"]].add(alert["source_record_id"])
    for name in DETECTORS:
        assert got[name] == expected[name], (
            f"{name}: missed {expected[name] - got[name]}, extra {got[name] - expected[name]}"
        )
