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
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from services.detector_runtime.sample_feed import FeedRecord, encoders
from shared.kafka.backpressure import produce_waiting
from shared.kafka.config import consumer_config, producer_config
from shared.settings import PROJECT_ROOT, Settings


def produce_feed(
    settings: Settings,
    topics: dict[str, str],
    records: Iterable[FeedRecord],
    **producer_overrides: Any,
) -> dict[str, int]:
    """Encode and produce records to ``topics[record_type]`` keyed by customer; counts per type."""
    from confluent_kafka import Producer

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
    import uuid

    from confluent_kafka import Consumer

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


def read_status(path: Path) -> dict[str, Any] | None:
    """An instance's status file, or None while there is none (it is replaced whole, never
    half-written)."""
    import json

    try:
        document: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return document


class DetectorProcess:
    """One detector instance as a subprocess; output goes to ``log_path``."""

    def __init__(
        self, settings: Settings, target: str | Path, args: Sequence[str], log_path: Path
    ) -> None:
        env = {**os.environ, "MESH_BOOTSTRAP_SERVERS": settings.bootstrap_servers}
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
            status = read_status(path)
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
