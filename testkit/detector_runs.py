"""Helpers for integration tests and benchmarks: feed topics, run instances, read results.

Not used by the runtime itself. A detector instance runs as a real subprocess
(``python -m services.detector_runtime``), so tests exercise exactly what production runs,
signals and exit codes included.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from shared.endpoints import resolve_bootstrap
from shared.json_files import read_json
from shared.kafka.backpressure import produce_waiting
from shared.kafka.config import consumer_config, producer_config
from shared.kafka.inspect import watermarks
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import FeedRecord, encoders, valid_records


def produce_feed(
    settings: Settings,
    topics: dict[str, str],
    records: Iterable[FeedRecord],
    **producer_overrides: Any,
) -> dict[str, int]:
    """Encode and produce records to ``topics[record_type]`` keyed by customer; counts per type."""

    encode = encoders()
    producer = Producer(producer_config(settings, **producer_overrides))
    counts: dict[str, int] = {}
    for r in records:
        topic = topics.get(r.record_type)
        if topic is None:
            continue
        produce_raw(producer, topic, encode[r.record_type].encode(r.record), r.key)
        counts[r.record_type] = counts.get(r.record_type, 0) + 1
    if producer.flush(60):
        raise RuntimeError("records not acknowledged within 60 s")
    return counts


#: Tests import it from here; the one implementation lives in shared.kafka.
produce_raw = produce_waiting


def read_topic(
    settings: Settings,
    topic: str,
    *,
    expect: int | None = None,
    timeout_s: float = 30.0,
    idle_s: float = 3.0,
) -> list[Any]:
    """Every message of ``topic`` from the start: until ``expect`` are read (then ``idle_s``
    more, to see extras), or nothing new came for ``idle_s`` after the timeout."""

    consumer = Consumer(consumer_config(settings, f"reader-{uuid.uuid4().hex[:8]}"))
    consumer.subscribe([topic])
    out: list[Any] = []
    deadline = time.monotonic() + timeout_s
    last_new = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if expect is not None and len(out) >= expect and now - last_new > idle_s:
                break
            if now > deadline and now - last_new > idle_s:
                break
            for message in consumer.consume(1000, timeout=0.2):
                if message.error() is None:
                    out.append(message)
                    last_new = time.monotonic()
        return out
    finally:
        consumer.close()


def read_to_end(settings: Settings, topic: str, timeout_s: float = 30.0) -> list[Any]:
    """Every message of ``topic`` up to its end offsets now, without waiting for more: for a
    topic whose writers are done (or a compacted one, whose offsets have gaps, so no count of
    messages says when all were read). A time-boxed read would wait out its box every time."""
    consumer = Consumer(consumer_config(settings, f"reader-{uuid.uuid4().hex[:8]}"))
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        ends = {}
        for number in metadata.partitions:
            _, high = watermarks(consumer, TopicPartition(topic, number), 10)
            if high > 0:
                ends[number] = high
        consumer.assign([TopicPartition(topic, number, 0) for number in ends])
        out: list[Any] = []
        position = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + timeout_s
        while any(position[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.2):
                if message.error() is None:
                    position[message.partition()] = message.offset() + 1
                    out.append(message)
        return out
    finally:
        consumer.close()


class PacedFeed:
    """Valid transactions and logins at ``rate`` records/s from a thread, until ``stop()``: the
    steady load of the isolation test and the deploy benchmark. Use as a context manager; an
    error in the thread is raised when it ends."""

    def __init__(self, settings: Settings, rate: float, customers: int = 100_000) -> None:
        self.settings, self.rate, self.customers = settings, rate, customers
        self.produced = {"transactions": 0, "logins": 0}
        self.error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PacedFeed:
        self._thread.start()
        return self

    def __enter__(self) -> PacedFeed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.ident is not None:  # started
            self._thread.join(60)
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            producer = Producer(producer_config(self.settings))
            encode = encoders()
            config = StreamConfig(
                start_time_ms=int(time.time() * 1000),
                count=50_000_000,
                event_rate=self.rate,
                customers=self.customers,
            )
            started = time.monotonic()
            for sent, record in enumerate(valid_records(config), start=1):
                if self._stopping.is_set():
                    break
                topic = TopicNames.of(self.settings).records(record.record_type)
                value = encode[record.record_type].encode(record.record)
                produce_raw(producer, topic, value, record.key)
                self.produced[record.record_type] += 1
                ahead = sent / self.rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
            producer.flush(60)
        except BaseException as exc:  # raised by stop(), in the caller's thread
            self.error = exc


class DetectorProcess:
    """One detector instance as a subprocess; output goes to ``log_path``."""

    def __init__(
        self,
        settings: Settings,
        target: str | Path,
        args: Sequence[str],
        log_path: Path,
        env: dict[str, str] | None = None,
    ) -> None:
        env = {
            **os.environ,
            "MESH_BOOTSTRAP_SERVERS": resolve_bootstrap(settings),
            **(env or {}),
        }
        self.log_path = log_path
        self._log = log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.detector_runtime", str(target), *args],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if text in self.log_text():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not in the log of the detector:\n{self.log_text()[-3000:]}")

    def wait_for_status(
        self, path: Path, until: Callable[[dict[str, Any]], bool], timeout_s: float = 30.0
    ) -> dict[str, Any]:
        """The instance's status file (``--status-file path``) once ``until`` holds for it."""
        deadline = time.monotonic() + timeout_s
        status: dict[str, Any] | None = None
        while True:
            exited = self.process.poll() is not None
            status = read_json(path)
            if status is not None and until(status):
                return status
            if exited or time.monotonic() > deadline:
                raise AssertionError(
                    f"status file never matched; last: {status}\n{self.log_text()[-3000:]}"
                )
            time.sleep(0.1)

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout_s)
        finally:
            self._log.close()

    def kill(self) -> None:
        """SIGKILL: no batch finished, nothing committed, no goodbye to the group."""
        self.process.kill()
        self.process.wait(30)
        self._log.close()

    def __enter__(self) -> DetectorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        self._log.close()
