"""Pacing and delivery accounting: the rate holds, no failed delivery goes uncounted, and a run
told to stop reports (and expects) only what it sent."""

from __future__ import annotations

import json
from pathlib import Path

from tools.loadgen.config import StreamConfig
from tools.loadgen.producer import DiscardingSink, KafkaSink
from tools.loadgen.rate_limit import TokenBucket
from tools.loadgen.run import SendOptions, produce


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds


def test_token_bucket_holds_the_rate_after_a_small_burst() -> None:
    fake = FakeTime()
    bucket = TokenBucket(100.0, clock=fake.clock, wait=fake.wait)
    for _ in range(1_000):
        bucket.acquire()
    assert 9.9 <= fake.now <= 10.0  # 1000 records at 100/s, minus the 5-record burst allowance


def test_token_bucket_holds_the_rate_when_waits_return_early() -> None:
    fake = FakeTime()

    def short_wait(seconds: float) -> None:
        fake.now += seconds / 3

    bucket = TokenBucket(100.0, clock=fake.clock, wait=short_wait)
    for _ in range(1_000):
        bucket.acquire()
    assert 9.9 <= fake.now <= 10.0


def test_token_bucket_with_rate_zero_never_waits() -> None:
    fake = FakeTime()
    bucket = TokenBucket(0.0, clock=fake.clock, wait=fake.wait)
    for _ in range(1_000):
        bucket.acquire()
    assert fake.now == 0.0


def test_discarding_sink_counts_everything_as_delivered() -> None:
    sink = DiscardingSink()
    sink.send("a", None, b"1")
    sink.send("a", b"k", b"2")
    outcome = sink.finish(1.0)
    assert outcome.delivered == {"a": 2}
    assert outcome.failed == 0


def test_kafka_sink_counts_records_no_broker_acknowledged() -> None:
    sink = KafkaSink(
        {"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 300, "log_level": 0}
    )
    for i in range(5):
        sink.send("loadgen.nowhere", b"k", b"%d" % i)
    outcome = sink.finish(timeout_s=10.0)
    assert outcome.failed == 5
    assert sum(outcome.delivered.values()) == 0
    assert outcome.errors


def test_kafka_sink_counts_records_the_producer_refuses() -> None:
    sink = KafkaSink(
        {
            "bootstrap.servers": "127.0.0.1:1",
            "message.max.bytes": 1_000,
            "message.timeout.ms": 300,
            "log_level": 0,
        }
    )
    sink.send("loadgen.nowhere", None, b"x" * 5_000)
    outcome = sink.finish(timeout_s=5.0)
    assert outcome.failed == 1
    assert "loadgen.nowhere" in outcome.errors[0]


def test_a_stopped_run_reports_and_records_only_what_it_sent(tmp_path: Path) -> None:
    class StoppingSink(DiscardingSink):
        """Tells the run to stop at its 300th record, as `mesh produce`'s SIGTERM would."""

        def send(self, topic, key, value, headers=None):  # type: ignore[no-untyped-def]
            super().send(topic, key, value, headers)
            if sum(self._outcome.delivered.values()) == 300:
                options.stop.set()

    truth = tmp_path / "truth.jsonl"
    options = SendOptions(ground_truth=truth, progress=False)
    config = StreamConfig(start_time_ms=1_700_000_000_000, count=2_000, seed=7, fraud_share=0.05)
    report = produce(config, options, StoppingSink())
    assert report.total == 300 and report.delivered == 300 and report.stopped_early
    assert report.summary()[0] == "stopped when told to, after 300 of 2000 records"
    sent = {e["index"] for e in map(json.loads, truth.read_text().splitlines()) if "index" in e}
    assert sent and max(sent) < 300  # nothing the run did not send is expected of the mesh
