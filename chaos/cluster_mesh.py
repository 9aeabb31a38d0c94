"""The whole mesh on a local 3-node cluster, as the cluster cases (16-19) drive and read it.

A case's mesh is `mesh up --brokers 3` on a MESH_HOME of its own (its faults hit brokers, so it
shares nothing with the suite's broker), fed by `mesh produce` with planted frauds. Everything a
verdict needs is read the way a user could: end offsets of the records topics, the ground truth
`mesh produce` writes, the files the notifier's channels deliver to, each supervised service's
restart count.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from confluent_kafka import Producer

from chaos.case_run import DRAIN_S
from chaos.replay_scope import Routing, routing_of
from control.supervised_service import supervised_child
from services.ingest.config import IngestConfig
from shared.avro import AvroDeserializer
from shared.kafka.cluster_health import read_cluster_health
from shared.kafka.config import producer_config
from shared.kafka.inspect import group_lag, partition_watermarks
from shared.local_process import LocalProcess
from shared.percentiles import nearest_rank
from shared.settings import PROJECT_ROOT, Settings
from testkit.detector_runs import read_to_end, read_topic
from tools.notification_summary import delivered, read_lines

#: `mesh produce`'s seed: the planted frauds' ground truth is named after it.
SEED = "48"
#: Where each of the shipped rules' channels writes what it delivered, under MESH_HOME (every
#: alert goes to the audit log, the high-severity ones to the webhook too).
CHANNEL_FILES = {"fraud-team": "webhook_receiver/received.jsonl",
                 "audit-log": "notifier/notifications.jsonl"}  # fmt: skip
#: The topics ingest routes to: valid records by type, invalid ones to their dead letters.
ROUTED = ("records.transactions", "records.logins", "records.invalid")
#: The raw topics `mesh produce` feeds.
RAW = ("raw.transactions", "raw.logins")

Planted = set[tuple[str, str, int]]


class ClusterMesh:
    """`mesh` as a user on a fresh MESH_HOME runs it: a local cluster of its own, not the
    suite's broker; the suite's InfluxDB if it names one."""

    def __init__(self, settings: Settings, home: Path, one_replica: tuple[str, ...] = ()) -> None:
        """``one_replica``: topics declared with replication 1 (a cluster that loses their
        partitions with a broker), in a copy of infra/topics.yaml the mesh is pointed at."""
        self.home = home
        env = {k: v for k, v in os.environ.items() if not k.startswith("MESH_")}
        env |= {"MESH_HOME": str(home), "MESH_BROKERS": "3", "MESH_BROKER_PORT": "0",
                "MESH_CACHE": str(settings.cache)}  # fmt: skip
        if settings.influx_url:
            env["MESH_INFLUX_URL"] = settings.influx_url
        if one_replica:
            env["MESH_TOPICS_FILE"] = str(_declare_one_replica(settings, home, one_replica))
        self.env = env
        self.settings = Settings.from_env(env)

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        """One `mesh` command, its output captured."""
        return subprocess.run([sys.executable, "-m", "control.cli.main", *args], env=self.env,
                              cwd=PROJECT_ROOT, capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip

    def produce(self, count: int, rate: float, customers: int = 100_000) -> subprocess.Popen:
        """`mesh produce` in the background: raw transactions and logins, 1 % planted frauds,
        from ``customers`` customers.

        Event time keeps step with the wall clock (``--event-rate`` = ``--rate``), as a live
        feed's does. Faster than its default pace (200/s) `mesh produce` compresses event time
        instead, and a raw partition routed 30 s behind the others at 800/s (a mesh warming up,
        a partition whose leader moved) then reached the detectors 120 s of event time behind
        their partition's stream time: past velocity's window and grace, so planted bursts were
        dropped as late with no fault at all (48 of 641). What the detectors do with records
        that late is issue 50's; these cases measure what the cluster loses."""
        return subprocess.Popen(
            [sys.executable, "-m", "control.cli.main", "produce", "--count", str(count),
             "--rate", str(int(rate)), "--event-rate", str(int(rate)), "--fraud-share", "0.01",
             "--customers", str(customers), "--seed", SEED, "--no-progress"],
            env=self.env, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip

    # what the cluster holds -------------------------------------------------------------------
    def busiest_node(self, bootstrap: str, topic: str | None = None) -> tuple[int, int]:
        """The node that leads the most partitions (of ``topic``, if given) now, and how many."""
        health = read_cluster_health(bootstrap)
        leaders = Counter(p.leader for p in health.partitions
                          if p.leader >= 0 and topic in (None, p.topic))  # fmt: skip
        node, count = leaders.most_common(1)[0]
        return node, count

    def routed(self, bootstrap: str) -> tuple[int, int]:
        """Valid records routed (records.transactions, records.logins) and invalid ones
        dead-lettered (records.invalid), as end offsets."""
        written = self._written(bootstrap)
        valid = written["records.transactions"] + written["records.logins"]
        return valid, written["records.invalid"]

    def output_ends(self, bootstrap: str) -> dict[tuple[str, int], int]:
        """The high watermark of every partition ingest routes to."""
        ends = partition_watermarks(bootstrap, list(ROUTED))
        return {(t, p): high for t, found in ends.items() for p, (_, high) in found.items()}

    def routings(self, bootstrap: str) -> list[Routing]:
        """Every routed copy of a raw record now, by its source's coordinates."""
        decode_invalid = AvroDeserializer("invalid_record")
        found = []
        for topic, written in self._written(bootstrap).items():
            messages = read_topic(self.settings, topic, expect=written, timeout_s=120, idle_s=1)
            found += [routing_of(m, "records.invalid", decode_invalid) for m in messages]
        return found

    def routing_checkpoint(self) -> Path:
        """Where the case mesh's ingest checkpoints routing (as the job itself finds it)."""
        return IngestConfig.from_settings(self.settings).checkpoints(self.settings) / "routing"

    def _written(self, bootstrap: str) -> dict[str, int]:
        """Records written to each topic ingest routes to (its offsets: nothing is compacted)."""
        ends = self.output_ends(bootstrap)
        return {topic: sum(h for (t, _), h in ends.items() if t == topic) for topic in ROUTED}

    def raw_coordinates(self, bootstrap: str) -> set[str]:
        """Every raw record the cluster acknowledged, as ``topic:partition:offset``."""
        ends = partition_watermarks(bootstrap, list(RAW))
        return {f"{t}:{p}:{o}" for t, found in ends.items() for p, (_, high) in found.items()
                for o in range(high)}  # fmt: skip

    def recorded_deliveries(self) -> dict[str, float]:
        """When the notifier first recorded each delivery DELIVERED in its changelog (the
        record's timestamp, epoch ms), by the book's key ``<alert_id>/<channel>``."""
        first: dict[str, float] = {}
        for message in read_to_end(self.settings, "notifier.changelog", timeout_s=60):
            value = message.value()
            if value is None or json.loads(value).get("status") != "DELIVERED":
                continue
            key, (_, at_ms) = message.key().decode(), message.timestamp()
            first[key] = min(first.get(key, at_ms), at_ms)
        return first

    def replay_alerts(self, count: int) -> tuple[int, int]:
        """Write the first ``count`` alerts of the ``alerts`` topic again, as they were (key,
        value, headers, partition): what a detector that processed its records again does, but
        certain to happen, so the notifier's suppression of a repeat is tested every run. How
        many were written, and how many of them the cluster did not acknowledge in 30 s."""
        again = read_to_end(self.settings, "alerts", timeout_s=60)[:count]
        producer = Producer(producer_config(self.settings))
        for message in again:
            producer.produce("alerts", message.value(), message.key(),
                             partition=message.partition(), headers=message.headers())  # fmt: skip
        return len(again), producer.flush(30)

    def notifier_caught_up(self, bootstrap: str, timeout_s: float) -> bool:
        """Whether the notifier's group committed every alert within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if group_lag(bootstrap, "notifier", ["alerts"]).total == 0:
                return True
            time.sleep(1)
        return False

    def alerts(self, bootstrap: str) -> int:
        ends = partition_watermarks(bootstrap, ["alerts"])
        return sum(high for _, high in ends.get("alerts", {}).values())

    # what reached people ----------------------------------------------------------------------
    def planted(self) -> Planted:
        truth = self.home / "loadgen" / f"ground-truth-seed{SEED}.jsonl"
        entries = [json.loads(line) for line in truth.read_text().splitlines() if line]
        return {(e["detector"], e["record_id"], e["event_time"]) for e in entries
                if e["entry"] == "alert"}  # fmt: skip

    def deliveries(self) -> list[dict]:
        """Every notification so far, on every channel."""
        return [line for lines in self.channels().values() for line in lines]

    def await_first_delivery(self, feed: subprocess.Popen, poll_s: float = 0.5) -> None:
        """Return once something was notified, or the ``feed`` (``mesh produce``) has ended. A
        fault is due at a share of the feed, and the first planted frauds come ~15 s in: on a
        slow start a fault due at 13 s met a mesh still warming up, which tests nothing, and the
        case failed for it ("the fault did not happen mid-run"), though its mesh lost nothing."""
        while not self.deliveries() and feed.poll() is None:
            time.sleep(poll_s)

    def channels(self) -> dict[str, list[dict]]:
        """Each channel's deliveries so far, by the channel's name."""
        return {name: read_lines(self.home / path) for name, path in CHANNEL_FILES.items()}

    def wait_notified(self, planted: Planted) -> Planted:
        """The planted frauds notified, once all are or the drain's time is up."""
        deadline = time.monotonic() + DRAIN_S
        while True:
            notified = set(delivered(self.deliveries())) & planted
            if notified == planted or time.monotonic() > deadline:
                return notified
            time.sleep(1)

    def restarted_since(self, before: dict[str, int]) -> dict[str, int]:
        """The supervised services restarted since ``before`` (:meth:`restarts`), and how often."""
        return {name: n - before.get(name, 0) for name, n in self.restarts().items()
                if n > before.get(name, 0)}  # fmt: skip

    def restarts(self) -> dict[str, int]:
        """Each supervised service's restarts so far, by its process name."""
        found = {}
        for state in self.home.glob("*/supervisor.json"):
            child = supervised_child(LocalProcess(state.parent.name, self.home))
            if child is not None:
                found[state.parent.name] = child.restarts
        return found


def _declare_one_replica(settings: Settings, home: Path, topics: tuple[str, ...]) -> Path:
    """A copy of the mesh's topic declarations with ``topics`` at replication 1, beside
    ``home``."""
    document = yaml.safe_load(settings.topics_file.read_text())
    for entry in document["topics"]:
        if entry["name"] in topics:
            entry |= {"replication_factor": 1, "min_insync_replicas": 1}
    path = home.parent / f"{home.name}-topics.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def produced(output: str) -> tuple[int, int]:
    """(sent, acknowledged) from `mesh produce`'s summary."""
    sent = re.search(r"produced (\d+) records", output)
    acknowledged = re.search(r"acknowledged (\d+), failed (\d+)", output)
    if sent is None or acknowledged is None:
        raise RuntimeError(f"`mesh produce` said no totals: {output[-400:]}")
    return int(sent.group(1)), int(acknowledged.group(1))


def timed(deliveries: list[dict]) -> list[tuple[float, float]]:
    """(raw record's timestamp, delivered) in ms of every delivery that knows both."""
    found = []
    for line in deliveries:
        at, source = line.get("at_ms", line.get("delivered_ms")), line.get("source_ms")
        if at is not None and source is not None:
            found.append((float(source), float(at)))
    return found


def flowing_again_s(deliveries: list[dict], since_ms: float) -> float | None:
    """Seconds from ``since_ms`` until a record sent after it was notified."""
    after = [at for source, at in timed(deliveries) if source > since_ms]
    return (min(after) - since_ms) / 1000 if after else None


def window_latency(
    deliveries: list[dict], start_ms: float, end_ms: float
) -> tuple[float, float] | None:
    """Raw -> notification p99 and max (ms) of the records sent in [start_ms, end_ms)."""
    spans = [at - source for source, at in timed(deliveries) if start_ms <= source < end_ms]
    p99 = nearest_rank(spans, 99)
    return (p99, max(spans)) if p99 is not None else None
