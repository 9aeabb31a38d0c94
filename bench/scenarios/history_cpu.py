"""The history job's CPU beside the live path: what one more Spark job costs the two cores.

The job runs as `mesh up` runs it (``python -m services.history``: a minute a batch, nice 10,
its own JVM options) against a private broker. Nothing is fed for a minute (idle), then
generator records at 1 000/s and at 3 000/s, each for ``MINUTES``; the job's CPU (its process
and JVM, :mod:`bench.process_cpu`) is read every minute, and each rate's row is the last
``STEADY`` minutes (the first ones are the JVM compiling what the batches make hot).

Rows are paced (the rate is the feed's, not a capacity): the figures are in the notes and in
``extra``: ms of CPU a second, and µs a record over the feed. The baseline is the idle minute
of the same run: what the job costs with nothing to store.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from bench.kafka_fixture import create_topic
from bench.process_cpu import snapshot
from bench.result import Result
from shared.endpoints import resolve_bootstrap
from shared.json_files import read_json
from shared.service_files import history_status_file
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import encoders, valid_records

PART = "history (Spark)"
RATES = (1000, 3000)
MINUTES = int(os.environ.get("MESH_BENCH_HISTORY_MINUTES", "5"))
STEADY = 2
PARTITIONS = 8
#: Encoded once and sent again and again: the feeder must not take the job's CPU.
POOL = 20_000


def run_history_cpu(settings: Settings) -> list[Result]:
    prefix = f"hcpu{int(time.time())}."
    topics = {kind: create_topic(settings, "", PARTITIONS, name=TopicNames(prefix).records(kind))
              for kind in ("transactions", "logins")}  # fmt: skip
    create_topic(settings, "", PARTITIONS, name=TopicNames(prefix).alerts)
    pool = _encoded_pool(topics)
    with tempfile.TemporaryDirectory(prefix="mesh-bench-history-") as home:
        job = _start_history(settings, Path(home), prefix)
        try:
            _wait_until_running(Path(home), job)
            rows = [_measure(job, 0, 1, None, "nothing fed")]
            for rate in RATES:
                rows.append(_measure(job, rate, MINUTES, (settings, pool), f"{rate}/s"))
        finally:
            job.terminate()
            job.wait(60)
    return rows


def _encoded_pool(topics: dict[str, str]) -> list[tuple[str, bytes, bytes]]:
    encode = {kind: serializer.encode for kind, serializer in encoders().items()}
    start_ms = int(time.time() * 1000)
    records = valid_records(StreamConfig(start_time_ms=start_ms, count=POOL, seed=5))
    return [(topics[r.record_type], r.key, encode[r.record_type](r.record)) for r in records]


def _start_history(settings: Settings, home: Path, prefix: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MESH_HOME": str(home), "MESH_TOPIC_PREFIX": prefix,
           "MESH_BOOTSTRAP_SERVERS": resolve_bootstrap(settings)}  # fmt: skip
    log = (home / "history.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "services.history"], cwd=PROJECT_ROOT,
                            env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip


def _wait_until_running(home: Path, job: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while (read_json(history_status_file(home)) or {}).get("state") != "running":
        if job.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the history job did not start: see {home / 'history.log'}")
        time.sleep(1)


def _measure(
    job: subprocess.Popen[bytes], rate: int, minutes: int,
    feed: tuple[Settings, list[tuple[str, bytes, bytes]]] | None, label: str,
) -> Result:  # fmt: skip
    stop = threading.Event()
    sent = [0]
    feeder = None
    if feed is not None:
        feeder = threading.Thread(target=_feed, args=(*feed, rate, stop, sent), daemon=True)
        feeder.start()
    per_minute: list[float] = []
    for _ in range(minutes):
        before = snapshot()
        time.sleep(60)
        per_minute.append(snapshot().since(before).get(PART, 0.0))
        if job.poll() is not None:
            raise RuntimeError(f"the history job exited ({job.returncode}) during {label}")
    stop.set()
    if feeder is not None:
        feeder.join(30)
    steady = per_minute[-STEADY:] if rate else per_minute
    cpu_ms_s = sum(steady) / (60 * len(steady)) * 1000
    per_record = cpu_ms_s * 1000 / rate if rate else 0.0
    minutes_text = ", ".join(f"{m:.1f}" for m in per_minute)
    notes = (f"{label}: {cpu_ms_s:.0f} ms CPU/s" + (f", {per_record:.0f} µs/record" if rate else "")
             + f" (CPU s per minute: {minutes_text})")  # fmt: skip
    return Result(f"history_cpu_{rate}" if rate else "history_cpu_idle", sent[0],
                  60.0 * minutes, notes=notes, paced=True,
                  extra={"cpu_ms_per_s": cpu_ms_s, "cpu_us_per_record": per_record})  # fmt: skip


def _feed(
    settings: Settings, pool: list[tuple[str, bytes, bytes]], rate: int,
    stop: threading.Event, sent: list[int],
) -> None:  # fmt: skip

    producer = Producer({"bootstrap.servers": resolve_bootstrap(settings), "linger.ms": 20})
    records = itertools.cycle(pool)
    started = time.monotonic()
    while not stop.is_set():
        due = int((time.monotonic() - started) * rate)
        while sent[0] < due:
            topic, key, value = next(records)
            producer.produce(topic, value, key)
            sent[0] += 1
        producer.poll(0)
        time.sleep(0.01)
    producer.flush(30)
