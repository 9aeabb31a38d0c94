"""A detector instance reports its built-in metrics (docs/metrics.md) to the mesh's `metrics`
topic, and the numbers agree with what the instance itself counted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from detector_folders import write_detector

from shared.avro import AvroDeserializer
from testkit.detector_runs import DetectorProcess, produce_feed, read_to_end
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

pytestmark = pytest.mark.integration

BUILT_IN = {
    "records.in": "METER",
    "records.out": "METER",
    "alerts": "METER",
    "records.replayed": "METER",
    "errors": "COUNTER",
    "dead_letters": "COUNTER",
    "processing": "TIMER",
    "delay.end_to_end": "HISTOGRAM",
    "consumer.lag": "GAUGE",
    "state.size": "GAUGE",
    "state.restore.progress": "GAUGE",
    "process.cpu_seconds": "GAUGE",
    "process.rss_bytes": "GAUGE",
}


def test_instance_reports_every_built_in_metric_matching_its_own_counters(
    private_mesh: Any, tmp_path: Path
) -> None:
    settings = private_mesh.settings
    folder = write_detector(tmp_path / "above900", "above900")
    started_ms = int(time.time() * 1000)
    config = StreamConfig(start_time_ms=started_ms - 60_000, count=5_000, fraud_share=0.05)
    topics = {"transactions": private_mesh.topic("records.transactions")}
    produced = produce_feed(settings, topics, valid_records(config))
    status_path = tmp_path / "status.json"
    with DetectorProcess(
        settings,
        folder,
        ["--topic-prefix", private_mesh.prefix, "--status-file", str(status_path)],
        tmp_path / "instance.log",
        env={"MESH_METRICS_INTERVAL_S": "1"},
    ) as instance:
        instance.wait_for_status(status_path, lambda s: s["records"] >= produced["transactions"])
        time.sleep(2.5)  # two more reports: the lag gauge has seen the end of the input
        assert instance.terminate() == 0
    status = instance.wait_for_status(status_path, lambda s: s["state"] != "running")

    decode = AvroDeserializer("metric_snapshot").decode
    latest: dict[str, dict[str, Any]] = {}
    for message in read_to_end(settings, private_mesh.topic("metrics")):  # it has stopped
        snapshot = decode(message.value())
        assert message.key().decode() == f"{snapshot['instance_id']}/{snapshot['name']}"
        assert snapshot["service"] == "detector.above900"
        assert snapshot["tags"] == {"detector": "above900"}
        previous = latest.get(snapshot["name"])
        if previous is not None and snapshot["count"] is not None:
            assert snapshot["count"] >= previous["count"], "counts are monotonic"
        latest[snapshot["name"]] = snapshot

    assert {name: s["type"] for name, s in latest.items()} == BUILT_IN
    assert len({s["instance_id"] for s in latest.values()}) == 1
    assert latest["records.in"]["count"] == status["records"] == produced["transactions"]
    assert latest["alerts"]["count"] == status["alerts"] > 0
    assert latest["records.out"]["count"] == status["alerts"] + status["dead_letters"]
    assert latest["errors"]["count"] == latest["dead_letters"]["count"] == 0
    assert latest["records.replayed"]["count"] == status["replayed"] == 0  # nothing routed again
    assert latest["processing"]["count"] == status["records"]
    assert latest["processing"]["duration_unit"] == "ms"
    delay = latest["delay.end_to_end"]
    # Records were stamped up to a minute before they were produced, then processed.
    assert delay["count"] == status["records"] and delay["max"] >= delay["min"] > 0
    assert latest["consumer.lag"]["value"] == 0.0
    assert latest["state.restore.progress"]["value"] == 1.0
    assert latest["process.cpu_seconds"]["value"] > 0
    assert latest["process.rss_bytes"]["value"] > 20 * 1024 * 1024
