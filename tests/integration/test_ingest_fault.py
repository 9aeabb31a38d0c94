"""Kill the ingest job with SIGKILL mid-stream: its supervisor restarts it, and nothing is lost.

The job runs as the real service (``python -m services.ingest.job`` under its supervisor, as
`mesh up` starts it), in both of its routing modes:

* micro-batch: reading a backlog in small micro-batches, so the kill lands between batches of a
  run that is far from done; duplicates no more than the uncommitted batches;
* real-time: records arrive at a steady rate while the job routes them as they come. First a
  graceful stop (SIGTERM, as `mesh down` sends) and a start: the stop waits for routing's next
  checkpoint, so of what was routed before it only the next batch's first moments (at most a
  second of records, not an interval) are routed again. Then the kill, while the feed still
  runs; duplicates no more than what one checkpoint interval (the real-time batch the kill
  interrupted) can have routed.

The supervisor restarts the job on its own (no one runs `mesh up` again) and says it was killed;
after the restart: every raw record routed at least once, duplicates within the bound (and
reported), window counts exact.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka_reading import read_all, records_in
from polling import wait_for

from control.launch.ingest import ingest_process, start_ingest
from control.supervised_service import supervised_child
from shared.avro import AvroDeserializer
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka

pytestmark = pytest.mark.integration

BATCH = 1500
#: The real-time run: records per second, seconds the feed goes on after the kill, and the
#: routing checkpoint interval.
RATE, AFTER_KILL_S, INTERVAL_S = 400, 10, 10


@pytest.mark.parametrize("mode", ["micro-batch", "real-time"])
def test_sigkill_mid_stream_then_restart_routes_everything_and_counts_exactly(
    mode, mesh_settings, unique_name, create_topics, tmp_path
):
    prefix = unique_name("kill")
    raw = [f"{prefix}.raw.transactions", f"{prefix}.raw.logins"]
    records = [f"{prefix}.records.transactions", f"{prefix}.records.logins"]
    invalid, windows = f"{prefix}.records.invalid", f"{prefix}.metrics.windows"
    create_topics(raw + records, partitions=8, config={"max.message.bytes": "4194304"})
    create_topics([invalid], partitions=4, config={"max.message.bytes": "4194304"})
    create_topics([windows], partitions=4, config={"cleanup.policy": "compact"})

    now = int(time.time() * 1000)
    real_time = mode == "real-time"
    send = SendOptions(topic_prefix=f"{prefix}.raw", progress=False, rate=RATE if real_time else 0)
    feed = _Feed(mesh_settings, send, slice_s=5 if real_time else 30, start_ms=now - 30_000)
    env = {
        "MESH_INGEST_MODE": mode,
        "MESH_INGEST_RAW_PATTERN": re.escape(prefix) + r"\.raw\..*",
        "MESH_INGEST_RECORDS_PREFIX": f"{prefix}.records",
        "MESH_INGEST_INVALID_TOPIC": invalid,
        "MESH_INGEST_WINDOWS_TOPIC": windows,
        "MESH_INGEST_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "MESH_INGEST_MAX_OFFSETS_PER_TRIGGER": str(BATCH),
        "MESH_INGEST_CHECKPOINT_INTERVAL": f"{INTERVAL_S} seconds",
        "MESH_INGEST_MAX_RECORD_BYTES": str(16 * 1024),
    }
    process = ingest_process(mesh_settings)
    outputs = [*records, invalid]
    if not real_time:  # a backlog of 12 000, read in small batches
        feed.run_once()

    _, started = start_ingest(mesh_settings, env)
    assert started
    try:
        if real_time:  # records arrive while the job runs
            feed.start()
        wait_for(lambda: records_in(mesh_settings.bootstrap_servers, outputs) >= 2 * BATCH,
                 240, "the first records routed")  # fmt: skip
        assert _routing_mode(process.log_file) == mode
        graceful: Counter = Counter()
        if real_time:
            # SIGTERM (what `mesh down` sends) stops real-time routing at its next checkpoint:
            # what it routed is committed, and the restarted job routes none of it again.
            process.stop()
            routed = records_in(mesh_settings.bootstrap_servers, outputs)
            graceful = _sources(read_all(mesh_settings.bootstrap_servers, outputs, routed), invalid)
            assert sum(graceful.values()) == routed
            _, again = start_ingest(mesh_settings, env)
            assert again
            wait_for(lambda: records_in(mesh_settings.bootstrap_servers, outputs) >= routed + BATCH,
                     240, "routing after the restart")  # fmt: skip
        job = supervised_child(process)
        assert job is not None and job.pid is not None and job.restarts == 0, job
        # The whole job dies at once, its Python driver and the Spark JVM it started, as when
        # its machine or container dies (a JVM left alone goes on routing while it shuts down).
        doomed = [job.pid, *_children(job.pid)]
        assert len(doomed) > 1, "no Spark JVM under the job"
        for pid in doomed:
            os.kill(pid, signal.SIGKILL)
        routed_at_kill = records_in(mesh_settings.bootstrap_servers, outputs)
        assert all(process.wait_gone(pid, 30) for pid in doomed), "the job survived SIGKILL"
        if real_time:
            assert feed.running, "the kill came after the last record was sent"
        assert routed_at_kill < feed.sent, "the kill came after the input was drained"

        def restarted() -> bool:
            now = supervised_child(process)
            return now is not None and now.restarts == 1 and now.pid not in (None, job.pid)

        wait_for(restarted, 60, "the supervisor to restart the job")
        restart = supervised_child(process)
        assert restart is not None and restart.last_exit == "killed by SIGKILL"
        if real_time:
            time.sleep(AFTER_KILL_S)  # records keep coming while the restarted job starts
            feed.stop()
        assert feed.failed == 0
        total = feed.sent
        wait_for(lambda: records_in(mesh_settings.bootstrap_servers, outputs) >= total,
                 300, "the restarted job to drain the input")  # fmt: skip
        wait_for(_stable(lambda: records_in(mesh_settings.bootstrap_servers, outputs)),
                 120, "routing to finish")  # fmt: skip
        routed = records_in(mesh_settings.bootstrap_servers, outputs)
        messages = read_all(mesh_settings.bootstrap_servers, outputs, routed)
        assert len(messages) == routed
        window_messages = None

        def windows_complete() -> bool:
            nonlocal window_messages
            window_messages = _latest_windows(mesh_settings.bootstrap_servers, windows)
            return sum(w["count"] for w in window_messages.values()) >= total

        wait_for(windows_complete, 120, "the window counts to catch up")
    finally:
        process.stop()

    sources = _sources(messages, invalid)
    duplicates = sum(n - 1 for n in sources.values())
    print(f"{mode}: routed {len(messages)} for {total} raw records, "
          f"{routed_at_kill} before the kill: {duplicates} duplicates after it")  # fmt: skip
    assert len(sources) == total, "a raw record was never routed"
    # The stop comes as the next real-time batch starts: only what that batch routed in its first
    # moments is routed again (a stop that cancelled the running batch would replay up to a whole
    # interval, INTERVAL_S seconds of records).
    again = [c for c in graceful if sources[c] > 1]
    if real_time:
        print(f"real-time: {len(again)} of {len(graceful)} records routed before SIGTERM again")
    assert len(again) <= RATE, f"{len(again)} records routed before the SIGTERM stop came again"
    # What a restart replays: the uncommitted micro-batches, or the real-time batch (one
    # checkpoint interval, plus the seconds a batch takes to start) the kill interrupted.
    bound = RATE * (INTERVAL_S + 10) if real_time else 2 * BATCH
    assert duplicates <= min(bound, routed_at_kill), "more duplicates than a replay can explain"
    counts = Counter()
    for window in window_messages.values():
        counts[window["status"]] += window["count"]
    assert sum(counts.values()) == total, f"window counts {dict(counts)} for {total} records"
    assert counts["INVALID"] == feed.invalid


class _Feed:
    """Generated raw records (5 % invalid) in slices of ``slice_s`` seconds at the send rate, from
    a thread until ``stop()``, so the feed outlasts however long the job takes to get to the
    kill; ``run_once`` sends one slice in the caller's thread."""

    def __init__(self, settings, send: SendOptions, slice_s: int, start_ms: int) -> None:  # type: ignore[no-untyped-def]
        self.settings, self.send, self.start_ms = settings, send, start_ms
        self.slice = (send.rate or 400) * slice_s
        self.sent = self.invalid = self.failed = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def run_once(self, seed: int = 21) -> None:
        stream = StreamConfig(start_time_ms=self.start_ms, count=self.slice, seed=seed,
                              invalid_share=0.05, event_rate=400,
                              max_record_bytes=16 * 1024)  # fmt: skip
        report = produce_to_kafka(stream, self.send, self.settings)
        self.sent += report.delivered
        self.invalid += report.invalid
        self.failed += report.failed
        self.start_ms += self.slice * 1000 // 400  # the next slice's events follow on

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(60)

    def _run(self) -> None:
        seed = 21
        while not self._stopping.is_set():
            self.run_once(seed)
            seed += 1


def _sources(messages: list, invalid: str) -> Counter:
    """How often each raw record (topic:partition:offset) was routed; each must have landed in
    one place only, a records topic or the dead letters, however often it was replayed."""
    decode_invalid = AvroDeserializer("invalid_record")
    sources: Counter = Counter()
    places: dict[str, set[str]] = {}
    for message in messages:
        if message.topic() == invalid:
            dead = decode_invalid.decode(message.value())
            coordinates = (
                f"{dead['source_topic']}:{dead['source_partition']}:{dead['source_offset']}"
            )
        else:
            coordinates = next(v.decode() for k, v in message.headers() if k == "mesh.source")
        sources[coordinates] += 1
        places.setdefault(coordinates, set()).add(message.topic())
    split = {c: p for c, p in places.items() if len(p) > 1}
    assert not split, f"{len(split)} raw records landed in two places, e.g. {split.popitem()}"
    return sources


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _routing_mode(log: Path) -> str | None:
    """The mode the job said it runs routing in (its JSON start line)."""
    for line in log.read_text().splitlines():
        if line.startswith('{"ingest_mode"'):
            return json.loads(line)["ingest_mode"]
    return None


def _stable(count, quiet_s: float = 4.0):
    """A condition that holds once ``count()`` has not changed for ``quiet_s`` seconds."""
    state = {"value": None, "since": time.monotonic()}

    def check() -> bool:
        value = count()
        if value != state["value"]:
            state["value"], state["since"] = value, time.monotonic()
        return time.monotonic() - state["since"] >= quiet_s

    return check


def _latest_windows(bootstrap: str, topic: str) -> dict:
    decode = AvroDeserializer("window_count")
    latest = {}
    for message in read_all(bootstrap, [topic], expected=10**9, timeout=5):
        latest[message.key()] = decode.decode(message.value())
    return latest
