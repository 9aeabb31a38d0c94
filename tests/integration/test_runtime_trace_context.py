"""A detector process honours the trace context each record carries, whatever its shape.

Three large transactions reach a real large_amount process (tracing to a real Jaeger, new traces
sampled at 100 %): one with a sampled ``traceparent``, one with a malformed one, one with an
unsampled one. Each gets its alert. The sampled record's process and publish spans join its
trace; the malformed header is ignored with a debug line and the record starts a new trace of
its own (a root process span, the alert naming it); the unsampled record's alert carries its
trace on unsampled, and Jaeger never hears of it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from polling import wait_for

from shared.kafka.config import producer_config
from shared.settings import PROJECT_ROOT, Settings
from shared.tracing.jaeger_api import get_trace
from testkit.detector_runs import DetectorProcess, produce_raw, read_topic
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import encoders, valid_records

pytestmark = pytest.mark.integration

SAMPLED_TRACE, UNSAMPLED_TRACE = (
    "4bf92f3577b34da6a3ce929d0e0e4736",
    "0af7651916cd43dd8448eb211c80319c",
)
SPAN = "00f067aa0ba902b7"
HEADERS = {
    "sampled": f"00-{SAMPLED_TRACE}-{SPAN}-01",
    "malformed": "00-not-a-valid-trace-01",
    "unsampled": f"00-{UNSAMPLED_TRACE}-{SPAN}-00",
}


def test_sampled_malformed_and_unsampled_trace_context(
    mesh_settings: Settings,
    jaeger: Any,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    tmp_path: Path,
) -> None:
    from confluent_kafka import Producer

    prefix = unique_name("tracectx")
    records_topic, alerts_topic, dlq_topic = create_topics(
        [f"{prefix}.records.transactions", f"{prefix}.alerts", f"{prefix}.dlq"], 1
    )
    config = StreamConfig(start_time_ms=1_790_000_000_000, count=3, types=("transactions",),
                          invalid_share=0.0, seed=4)  # fmt: skip
    producer = Producer(producer_config(mesh_settings))
    encode = encoders()["transactions"]
    for (case, traceparent), feed in zip(HEADERS.items(), valid_records(config), strict=True):
        record = {**feed.record, "amount": 9_000_000.0, "currency": "EUR"}
        produce_raw(producer, records_topic, encode.encode(record), case.encode(),
                    headers=[("traceparent", traceparent.encode())])  # fmt: skip
    assert producer.flush(30) == 0

    env = {"MESH_OTLP_ENDPOINT": jaeger.otlp_endpoint, "MESH_TRACE_SAMPLE_RATIO": "1.0"}
    args = [
        "--input", f"transactions={records_topic}", "--alerts-topic", alerts_topic,
        "--dlq-topic", dlq_topic, "--group", f"{prefix}.detector", "--log-level", "DEBUG",
    ]  # fmt: skip
    log_path = tmp_path / "detector.log"
    with DetectorProcess(
        mesh_settings, PROJECT_ROOT / "detectors" / "large_amount", args, log_path, env=env
    ) as detector:
        alerts = read_topic(mesh_settings, alerts_topic, expect=3, timeout_s=60)
        assert detector.terminate() == 0  # spans are flushed on the way out
    assert read_topic(mesh_settings, dlq_topic, timeout_s=5, idle_s=1) == []

    # Alerts are keyed by customer; the record each came from is found by its trace header.
    carried = {
        alert.offset(): dict(alert.headers() or [])["traceparent"].decode() for alert in alerts
    }
    by_trace = {value.split("-")[1]: value for value in carried.values()}
    assert len(alerts) == 3 and len(by_trace) == 3

    sampled = by_trace.pop(SAMPLED_TRACE)
    unsampled = by_trace.pop(UNSAMPLED_TRACE)
    ((new_trace, started),) = by_trace.items()
    assert sampled.endswith("-01") and sampled.split("-")[2] != SPAN  # names its publish span
    assert unsampled == HEADERS["unsampled"]  # passed on as it came
    assert started.endswith("-01")  # the new trace, sampled at the ratio (100 %)
    assert "ignoring malformed traceparent" in detector.log_text()

    def spans_of(trace_id: str, count: int) -> list[dict[str, Any]]:
        wait_for(lambda: len(get_trace(jaeger.ui_url, trace_id)) >= count, timeout=30,
                 what=f"{count} spans of trace {trace_id} in Jaeger")  # fmt: skip
        return get_trace(jaeger.ui_url, trace_id)

    joined = {s["name"]: s for s in spans_of(SAMPLED_TRACE, 2)}
    process, publish = joined[f"{records_topic} process"], joined[f"{alerts_topic} publish"]
    assert process["parent_span_id"] == SPAN and publish["parent_span_id"] == process["span_id"]

    fresh = {s["name"]: s for s in spans_of(new_trace, 2)}
    root = fresh[f"{records_topic} process"]
    assert not root.get("parent_span_id")  # a new trace's root, not a child of the garbage
    assert fresh[f"{alerts_topic} publish"]["parent_span_id"] == root["span_id"]
    assert root["service"] == "detector.large_amount"

    assert get_trace(jaeger.ui_url, UNSAMPLED_TRACE) == []
