"""The tracing benchmark (``python -m bench tracing``): what tracing costs a detector.

The large_amount detector on one in-process runtime instance drains the same 100 000
transactions three ways in one run: tracing off (no OTLP endpoint), on with 1 % of the records'
traces sampled (as ingest decides it: ``TraceIdRatioBased(0.01)`` on random trace ids), and on
with every record sampled. Spans go over OTLP/HTTP to a local receiver that answers 200 to every
export (the SDK's and the exporter's cost, not a backend's). The aim is at most 5 % cost at 1 %.
"""

from __future__ import annotations

import http.server
import os
import threading
import time
import uuid
from dataclasses import replace

from bench.kafka_fixture import create_topic
from bench.result import Result
from services.detector_runtime.sample_feed import encoders, valid_records
from services.loadgen import StreamConfig
from shared.kafka.backpressure import produce_waiting
from shared.kafka.config import producer_config
from shared.settings import Settings

COUNT = 100_000
PARTITIONS = 8
ROUNDS = 2


class _Receiver(http.server.BaseHTTPRequestHandler):
    """Accepts every OTLP/HTTP export and throws it away."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _feed(settings: Settings, share: float) -> str:
    """A topic of COUNT transactions whose traceparent is sampled for ``share`` of them."""
    from confluent_kafka import Producer

    bound = round(share * 2**64)
    topic = create_topic(settings, "", PARTITIONS, name=f"bench.trace.{uuid.uuid4().hex[:8]}")
    encode = encoders()["transactions"]
    producer = Producer(producer_config(settings))
    config = StreamConfig(start_time_ms=1_790_000_000_000, count=COUNT, types=("transactions",),
                          invalid_share=0.0, seed=9)  # fmt: skip
    for record in valid_records(config):
        trace_id = os.urandom(16).hex()
        flag = "01" if int(trace_id[16:], 16) < bound else "00"
        header = f"00-{trace_id}-{os.urandom(8).hex()}-{flag}".encode()
        produce_waiting(producer, topic, encode.encode(record.record), record.key,
                        headers=[("traceparent", header)])  # fmt: skip
    producer.flush(120)
    return topic


def _drain(settings: Settings, topic: str) -> tuple[float, int]:
    """Records/s of large_amount over ``topic``, and the spans it exported."""
    from services.detector_runtime.config import RuntimeConfig, default_topics
    from services.detector_runtime.main import start
    from shared.detector import load_detector

    detector, manifest = load_detector("detectors.large_amount")
    prefix = f"bench.trace.{uuid.uuid4().hex[:8]}."
    topics = default_topics(detector, prefix, {"transactions": topic})
    for name in (topics.alerts, topics.dlq):
        create_topic(settings, "", PARTITIONS, name=name)
    config = RuntimeConfig(detector=detector, manifest=manifest, topics=topics,
                           group_id=f"{prefix}detector.large_amount",
                           instance_id="bench-tracing", log_interval_s=3600)  # fmt: skip
    runner = start(settings, config)
    runner.run(stop_when=lambda c: c.records >= COUNT)
    seconds = time.perf_counter() - (runner.counters.first_batch_at or time.perf_counter())
    runner.tracing.tracing.flush(10)
    exported = runner.tracing.tracing.stats().spans_exported
    return runner.counters.records / seconds, exported


def run_tracing(settings: Settings) -> list[Result]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        one_percent, everything = _feed(settings, 0.01), _feed(settings, 1.0)
        off = replace(settings, otlp_endpoint="")
        on = replace(settings, otlp_endpoint=endpoint)
        rates: dict[str, list[float]] = {"off": [], "1%": [], "100%": []}
        spans: dict[str, int] = {"off": 0, "1%": 0, "100%": 0}
        for _ in range(ROUNDS):  # alternate, so drift on a shared machine hits every variant
            for name, variant, topic in (
                ("off", off, one_percent), ("1%", on, one_percent), ("100%", on, everything),
            ):  # fmt: skip
                rate, exported = _drain(variant, topic)
                rates[name].append(rate)
                spans[name] = max(spans[name], exported)
    finally:
        server.shutdown()
    best = {name: max(values) for name, values in rates.items()}
    results = []
    for name in ("off", "1%", "100%"):
        ratio = best[name] / best["off"]
        results.append(
            Result(
                f"tracing_{name.rstrip('%')}{'pct' if name != 'off' else ''}",
                COUNT,
                COUNT / best[name],
                notes=f"large_amount, tracing {name}: {ratio:.3f} of tracing off; "
                f"{spans[name]} spans exported; rounds "
                + " / ".join(f"{r:,.0f}" for r in rates[name]),
                extra={"ratio_to_off": ratio, "spans": spans[name]},
            )
        )
    return results
