"""The notifier as the tests run it: a real ``python -m services.notifier`` process on a private
mesh, alerts produced as the detectors produce them, and readers of what it wrote."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from shared.avro import AvroDeserializer, AvroSerializer
from shared.json_files import read_json
from shared.kafka.config import producer_config
from shared.settings import PROJECT_ROOT, Settings
from testkit.detector_runs import read_to_end

DETECTED_MS = 1_795_000_000_000


def alert(alert_id: str, *, detector: str = "large_amount", severity: str = "HIGH",
          customer: str = "cust_1") -> dict[str, Any]:  # fmt: skip
    """A valid Alert record (what a detector writes), with the fields the rules look at."""
    return {
        "alert_id": alert_id, "detector": detector, "detector_version": "1.0.0",
        "rule": "test_rule", "severity": severity, "score": 1.0, "reason": "a test alert",
        "customer_id": customer, "source_record_id": f"rec-{alert_id}",
        "source_topic": "records.transactions", "source_partition": 0, "source_offset": 0,
        "event_time": DETECTED_MS, "detection_time": DETECTED_MS, "evidence": {},
    }  # fmt: skip


def produce_alerts(
    settings: Settings,
    topic: str,
    alerts: list[dict[str, Any] | bytes],
    headers: list[tuple[str, bytes]] | None = None,
) -> None:
    """Produce ``alerts`` (records, or raw bytes for a bad one) keyed by customer, as detectors
    do (with ``headers``, e.g. a trace context), and wait for the broker to have them."""

    encode = AvroSerializer("alert").encode
    producer = Producer(producer_config(settings))
    for record in alerts:
        if isinstance(record, bytes):
            producer.produce(topic, record, b"bad", headers=headers)
        else:
            key = str(record["customer_id"]).encode()
            producer.produce(topic, encode(record), key, headers=headers)
    assert producer.flush(30) == 0


def read_all(settings: Settings, topic: str, timeout_s: float = 10.0) -> list[Any]:
    """Every message in ``topic`` now (up to its end offsets)."""
    return read_to_end(settings, topic, timeout_s)


def notifications(settings: Settings, topic: str) -> list[dict[str, Any]]:
    """The Notification records in ``topic``, decoded, in partition order."""
    decode = AvroDeserializer("notification").decode
    return [decode(m.value()) for m in read_all(settings, topic)]


def book_entries(settings: Settings, topic: str) -> dict[str, dict[str, Any]]:
    """The notifier changelog's latest entry per ``<alert_id>/<channel>``."""
    latest: dict[str, dict[str, Any]] = {}
    for message in read_all(settings, topic):
        key = message.key().decode()
        if message.value() is None:
            latest.pop(key, None)
        else:
            latest[key] = json.loads(message.value())
    return latest


class NotifierProcess:
    """One notifier instance as a subprocess, on the private mesh ``env`` describes."""

    def __init__(
        self,
        env: dict[str, str],
        rules: Path,
        log_path: Path,
        status: Path,
        instance_id: str | None = None,
    ) -> None:
        """``instance_id``: a name that outlives the process (a static group member)."""
        self.log_path, self.status_path = log_path, status
        self._log = log_path.open("ab")
        named = ["--instance-id", instance_id] if instance_id else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.notifier", "--rules", str(rules),
             "--status-file", str(status), *named],
            cwd=PROJECT_ROOT, env={**os.environ, **env}, stdout=self._log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def status(self, until: Callable[[dict[str, Any]], bool], timeout_s: float = 60.0) -> dict:
        """The status file once ``until`` holds for it (an AssertionError with the log if not)."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = read_json(self.status_path)
            if found is not None and found.get("pid") == self.process.pid and until(found):
                return found
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"notifier status never matched; last {found}\n"
                                     f"{self.log_text()[-3000:]}")  # fmt: skip
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no drain, no last writes."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self._log.close()

    def stop(self, timeout_s: float = 30.0) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()
        return self.process.returncode
