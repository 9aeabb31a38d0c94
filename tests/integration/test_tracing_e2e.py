"""One record, one trace: from the customer's span through ingest and a detector to the alert.

A raw transaction far above its currency's threshold arrives with the customer's sampled
``traceparent``. Ingest (the real Spark job, its ``ingest-traces`` query on) and the
large_amount detector (a real process) export their spans over OTLP to a real Jaeger; the trace
fetched back from Jaeger's HTTP API holds ingest's span (child of the customer's), the
detector's process span (child of ingest's) and the alert's publish span (child of that), from
two services, with the messaging attributes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from polling import wait_for
from traced_pipeline import create_pipeline_topics, large_amount_args, run_traced_ingest

from shared.settings import PROJECT_ROOT, Settings
from shared.tracing.jaeger_api import get_trace
from testkit.detector_runs import DetectorProcess, read_topic

pytestmark = pytest.mark.integration

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CUSTOMER_SPAN = "00f067aa0ba902b7"


def test_an_alerted_record_has_one_trace_from_ingest_to_the_alert(
    spark: Any,
    mesh_settings: Settings,
    jaeger: Any,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    prefix = unique_name("trace")
    create_pipeline_topics(create_topics, prefix)
    raw_topic = f"{prefix}.raw.transactions"
    record = {
        "record_id": "r-traced-1",
        "customer_id": "c-42",
        "event_time": int(time.time() * 1000),
        "amount": 250_000.0,
        "currency": "EUR",
        "merchant_id": "m-1",
        "country": "DE",
    }
    producer = Producer({"bootstrap.servers": mesh_settings.bootstrap_servers})
    traceparent = f"00-{TRACE_ID}-{CUSTOMER_SPAN}-01"
    producer.produce(raw_topic, json.dumps(record).encode(), b"c-42",
                     headers=[("traceparent", traceparent.encode())])  # fmt: skip
    assert producer.flush(30) == 0

    # Ingest, in the session's Spark, exporting its spans to Jaeger.
    queries = run_traced_ingest(
        spark, mesh_settings, jaeger.otlp_endpoint, prefix, tmp_path / "cp", sample_ratio=1.0
    )
    assert "ingest-traces" in [q.name for q in queries]

    # The detector, as a real process, exporting to the same Jaeger.
    env = {"MESH_OTLP_ENDPOINT": jaeger.otlp_endpoint}
    with DetectorProcess(
        mesh_settings, PROJECT_ROOT / "detectors" / "large_amount", large_amount_args(prefix),
        tmp_path / "detector.log", env=env,
    ) as detector:  # fmt: skip
        alerts = read_topic(mesh_settings, f"{prefix}.alerts", expect=1, timeout_s=60)
        assert len(alerts) == 1
        assert detector.terminate() == 0  # its spans are flushed on the way out
    alert_parent = dict(alerts[0].headers() or [])["traceparent"].decode()
    assert alert_parent.split("-")[1] == TRACE_ID

    def spans() -> list[dict[str, Any]]:
        return get_trace(jaeger.ui_url, TRACE_ID)

    wait_for(lambda: len(spans()) >= 3, timeout=60, what="three spans of the trace in Jaeger")
    by_name = {s["name"]: s for s in spans()}
    ingest = by_name[f"{raw_topic} process"]
    process = by_name[f"{prefix}.records.transactions process"]
    publish = by_name[f"{prefix}.alerts publish"]

    assert ingest["service"] == "ingest" and ingest["parent_span_id"] == CUSTOMER_SPAN
    assert process["service"] == "detector.large_amount"
    assert process["parent_span_id"] == ingest["span_id"]
    assert publish["service"] == "detector.large_amount"
    assert publish["parent_span_id"] == process["span_id"]
    assert alert_parent.split("-")[2] == publish["span_id"]  # the alert carries its publish span

    assert ingest["attributes"]["mesh.ingest.outcome"] == "valid"
    assert ingest["attributes"]["messaging.destination.name"] == raw_topic
    assert process["attributes"]["messaging.system"] == "kafka"
    assert process["attributes"]["messaging.consumer.group.name"] == (
        f"{prefix}.detector.large_amount"
    )
    assert "messaging.kafka.offset" in process["attributes"]
    assert publish["attributes"]["messaging.destination.name"] == f"{prefix}.alerts"
