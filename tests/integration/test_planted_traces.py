"""``mesh produce --trace-planted`` + ``tools.loadgen.score``: every planted alert is raised and
its trace, from ingest to the alert's publish, is in the trace backend, with ingest sampling nothing
on its own.

The generator sends planted fraud with a sampled ``traceparent``; the real ingest job (Spark, its
``ingest-traces`` query on at sample ratio 0) and the large_amount detector (a real process)
export to a real Jaeger. The scorer reads the alerts back from Kafka and finds each alert's path
in Jaeger: ingest's span -> the detector's process span -> the alert's publish span. No other
record of the run leaves a trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from traced_pipeline import create_pipeline_topics, large_amount_args, run_traced_ingest

from shared.settings import PROJECT_ROOT, Settings
from shared.tracing.jaeger_api import find_traces
from testkit.detector_runs import DetectorProcess
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka
from tools.loadgen.ground_truth import read_ground_truth
from tools.loadgen.score import alert_path, planted_alerts, read_raised

pytestmark = pytest.mark.integration


def test_every_planted_alert_is_raised_and_traced_from_ingest_to_its_publish(
    spark: Any,
    mesh_settings: Settings,
    jaeger: Any,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("planted")
    create_pipeline_topics(create_topics, prefix)
    stream = StreamConfig(
        start_time_ms=int(time.time() * 1000) - 60_000, count=1500, seed=5, customers=3000,
        event_rate=50.0, types=("transactions",), patterns=("large_amount",), fraud_share=0.01,
        invalid_share=0.0,
    )  # fmt: skip
    truth_file = tmp_path / "truth.jsonl"
    options = SendOptions(topic_prefix=f"{prefix}.raw", ground_truth=truth_file,
                          progress=False, trace_planted=True)  # fmt: skip
    assert produce_to_kafka(stream, options, mesh_settings).failed == 0
    expected = planted_alerts(read_ground_truth(truth_file))
    assert len(expected) >= 3 and all(expected.values()), expected

    # Ingest samples nothing itself: only the sender's sampled context makes traces.
    run_traced_ingest(
        spark, mesh_settings, jaeger.otlp_endpoint, prefix, tmp_path / "cp", sample_ratio=0.0
    )

    args = large_amount_args(prefix)
    env = {"MESH_OTLP_ENDPOINT": jaeger.otlp_endpoint, "MESH_TRACE_SAMPLE_RATIO": "0"}
    with DetectorProcess(mesh_settings, PROJECT_ROOT / "detectors" / "large_amount", args,
                         tmp_path / "detector.log", env=env) as detector:  # fmt: skip
        raised = read_raised(mesh_settings, f"{prefix}.alerts", set(expected), timeout_s=60)
        assert detector.terminate() == 0  # flushes its spans
    assert raised == set(expected)

    for key, trace in expected.items():
        path, _ = alert_path(jaeger.ui_url, trace or "", "large_amount", timeout_s=60)
        assert [(s["service"], s["name"]) for s in path] == [
            ("ingest", f"{prefix}.raw.transactions process"),
            ("detector.large_amount", f"{prefix}.records.transactions process"),
            ("detector.large_amount", f"{prefix}.alerts publish"),
        ], key
        assert {s["trace_id"] for s in path} == {trace}

    # No other record of the run was traced: the detector's traces of this run are the planted.
    found = find_traces(jaeger.ui_url, "detector.large_amount", limit=1000, since_s=600)
    ours = {
        spans[0]["trace_id"]
        for spans in found
        if any(
            str(s["attributes"].get("messaging.destination.name")).startswith(prefix) for s in spans
        )
    }
    assert ours == set(expected.values())
