"""Case 16: one broker of three killed under load, on the whole mesh, and not brought back.

Issue 48's report, as a case: `mesh up --brokers 3` on a MESH_HOME of its own (a local KRaft
cluster, every topic at replication 3 and min.insync.replicas 2), `mesh produce` feeding raw
transactions and logins with planted frauds, and at 40 % of the feed a SIGKILL of the node that
leads the most partitions. Nobody restarts it. On one broker with replication 1 this lost 61 of
102 planted frauds and set ingest, the aggregator and two detectors crash-looping.

The verdict, each from what a user can see:

* **nothing acknowledged lost**: every raw record the broker acknowledged is routed (the valid
  ones to the records topics, the invalid ones to their dead letters: counted by offsets, the
  probes of `mesh up` subtracted), and every planted fraud reaches the webhook (the ground truth
  against the demo receiver's file);
* **degrade, never stop**: no supervised service restarted (ingest, aggregator, history,
  notifier, every detector replica), and `mesh status` during the loss says which node is lost;
* **the fault mid-run**: after the first planted fraud was notified, while the feed still sent.

Figures: sent, acknowledged, routed (valid and dead-lettered), alerted, notified, lost,
duplicated (routed beyond acknowledged, and webhook deliveries beyond one per alert), the time
from the kill until a record sent after it was notified, and raw -> notification p99 of the
records sent in the 30 s after the kill.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from chaos.case_run import DRAIN_S, Load
from chaos.report import CaseResult
from chaos.smoke import SmokeFigures
from control.supervised_service import supervised_child
from hosting.servers.kafka_cluster import LocalKafka
from shared.endpoints import resolve_bootstrap
from shared.kafka.cluster_health import read_cluster_health
from shared.kafka.inspect import partition_watermarks
from shared.local_process import LocalProcess
from shared.percentiles import nearest_rank
from shared.pids import wait_gone
from shared.settings import PROJECT_ROOT, Settings
from tools.notification_summary import delivered, read_lines

SEED = "48"
#: When the node dies, as a share of the feed.
KILL_AT = 0.4
#: The window after the kill whose records' notification latency is the "during the fault" p99.
FAULT_WINDOW_S = 30.0


def _feed(short: bool) -> Load:
    """The short form for `make test`, the long one for `make chaos`: the whole mesh on two
    cores takes less than the echo cases' rates."""
    return Load(60.0, 400.0) if short else Load(180.0, 800.0)


def cluster_broker_kill(settings: Settings, work: Path, short: bool) -> CaseResult:
    home = work / "cluster-mesh"
    env = _mesh_env(settings, home)
    mesh_settings = Settings.from_env(env)
    feed = _feed(short)
    count = int(feed.seconds * feed.rate)
    failures: list[str] = []
    notes: list[str] = []
    up = _mesh(env, "up", "--brokers", "3", timeout=600)
    try:
        if up.returncode != 0:
            return _failed(f"mesh up --brokers 3 failed: {(up.stdout + up.stderr)[-400:]}")
        bootstrap = resolve_bootstrap(mesh_settings)
        before = _routed(bootstrap)
        started_ms = time.time() * 1000
        producer = subprocess.Popen(
            [sys.executable, "-m", "control.cli.main", "produce", "--count", str(count),
             "--rate", str(int(feed.rate)), "--fraud-share", "0.01", "--customers", "100000",
             "--seed", SEED, "--no-progress"],
            env=env, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        time.sleep(feed.seconds * KILL_AT)
        mid_run = bool(_deliveries(home)) and producer.poll() is None
        restarts_before = _restarts(home)
        victim, led = _busiest_node(bootstrap)
        pid = _pid_of(mesh_settings, victim)
        killed_ms = time.time() * 1000
        os.kill(pid, signal.SIGKILL)
        if not wait_gone(pid, 30):
            failures.append(f"node {victim} survived SIGKILL")
        notes.append(
            f"node {victim} (leading {led} partitions) SIGKILLed "
            f"{(killed_ms - started_ms) / 1000:.0f} s into the feed, not restarted"
        )
        time.sleep(5)
        status = _mesh(env, "status", timeout=120)
        if f"node {victim} LOST" not in status.stdout:
            failures.append(f"`mesh status` during the loss did not say node {victim} LOST: "
                            f"{status.stdout[:300]!r}")  # fmt: skip
        output, _ = producer.communicate(timeout=int(feed.seconds) * 3 + 120)
        mid_run &= producer.returncode == 0 or "acknowledged" in output
        sent, acknowledged = _produced(output)
        planted = _planted(home)
        notified = _wait_notified(home, planted)
        routed, dead_lettered = (a - b for a, b in zip(_routed(bootstrap), before, strict=True))
        alerted = _alerts(bootstrap)
        restarted = {name: n - restarts_before.get(name, 0)
                     for name, n in _restarts(home).items()
                     if n > restarts_before.get(name, 0)}  # fmt: skip
        if restarted:
            failures.append("restarted during the loss: " + ", ".join(
                f"{name} {n}x" for name, n in sorted(restarted.items())))  # fmt: skip
        missing = planted - notified
        if missing:
            failures.append(f"{len(missing)} of {len(planted)} planted frauds never notified "
                            f"(e.g. {sorted(missing)[:2]})")  # fmt: skip
        deliveries = _deliveries(home)
        repeats = _repeats(home)
        flowing = _flowing_again_s(deliveries, killed_ms)
        p99 = _fault_p99(deliveries, killed_ms)
        notes.append(
            f"routed {routed} + {dead_lettered} dead-lettered of {acknowledged} acknowledged; "
            f"alerts {alerted}; planted notified {len(notified & planted)} of {len(planted)}; "
            f"webhook repeats {repeats}; notifications flowing again "
            + (f"{flowing:.1f} s after the kill" if flowing is not None else "never")
            + (f"; raw -> notification p99 {p99:.0f} ms for records of the {FAULT_WINDOW_S:.0f}"
               " s after the kill" if p99 is not None else "")
        )  # fmt: skip
        figures = SmokeFigures(
            sent=sent, acknowledged=acknowledged, seen=routed,
            lost=max(0, acknowledged - routed - dead_lettered) + len(missing),
            duplicated=max(0, routed + dead_lettered - acknowledged), out_of_order=0,
            dead_lettered=dead_lettered,
        )  # fmt: skip
        return CaseResult("cluster_broker_kill", figures, flowing, mid_run, 0, 0, notes,
                          failures)  # fmt: skip
    finally:
        _mesh(env, "down", timeout=300)


def _mesh_env(settings: Settings, home: Path) -> dict[str, str]:
    """`mesh` as a user on a fresh MESH_HOME runs it: a local cluster of its own, not the
    suite's broker; the suite's InfluxDB if it names one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESH_")}
    env |= {"MESH_HOME": str(home), "MESH_BROKERS": "3", "MESH_BROKER_PORT": "0",
            "MESH_CACHE": str(settings.cache)}  # fmt: skip
    if settings.influx_url:
        env["MESH_INFLUX_URL"] = settings.influx_url
    return env


def _mesh(env: dict[str, str], *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control.cli.main", *args], env=env,
                          cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def _failed(why: str) -> CaseResult:
    return CaseResult("cluster_broker_kill", SmokeFigures(0, 0, 0, 0, 0, 0), None, False, 0, 0,
                      [], [why])  # fmt: skip


def _busiest_node(bootstrap: str) -> tuple[int, int]:
    """The node that leads the most partitions now, and how many."""
    health = read_cluster_health(bootstrap)
    leaders = Counter(p.leader for p in health.partitions if p.leader >= 0)
    node, count = leaders.most_common(1)[0]
    return node, count


def _pid_of(settings: Settings, node: int) -> int:
    for state in LocalKafka(settings).states():
        if state.node == node and state.info is not None:
            return state.info.pid
    raise RuntimeError(f"node {node} of the case's cluster is not running")


def _routed(bootstrap: str) -> tuple[int, int]:
    """Valid records routed (records.transactions, records.logins) and invalid ones
    dead-lettered (records.invalid), as end offsets."""
    ends = partition_watermarks(bootstrap, ["records.transactions", "records.logins",
                                            "records.invalid"])  # fmt: skip
    written = {t: sum(high for _, high in p.values()) for t, p in ends.items()}
    valid = written.get("records.transactions", 0) + written.get("records.logins", 0)
    return valid, written.get("records.invalid", 0)


def _alerts(bootstrap: str) -> int:
    ends = partition_watermarks(bootstrap, ["alerts"])
    return sum(high for _, high in ends.get("alerts", {}).values())


def _produced(output: str) -> tuple[int, int]:
    """(sent, acknowledged) from `mesh produce`'s summary."""
    sent = re.search(r"produced (\d+) records", output)
    acknowledged = re.search(r"acknowledged (\d+), failed (\d+)", output)
    if sent is None or acknowledged is None:
        raise RuntimeError(f"`mesh produce` said no totals: {output[-400:]}")
    return int(sent.group(1)), int(acknowledged.group(1))


def _planted(home: Path) -> set[tuple[str, str, int]]:
    truth = home / "loadgen" / f"ground-truth-seed{SEED}.jsonl"
    entries = [json.loads(line) for line in truth.read_text().splitlines() if line]
    return {(e["detector"], e["record_id"], e["event_time"]) for e in entries
            if e["entry"] == "alert"}  # fmt: skip


def _deliveries(home: Path) -> list[dict]:
    """Every notification so far: the webhook receiver's requests and the audit file's lines
    (the shipped rules send every alert to the audit log, the larger ones to the webhook too)."""
    return [line for path in _CHANNEL_FILES for line in read_lines(home / path)]


#: Where the shipped rules' channels write what they delivered, under MESH_HOME.
_CHANNEL_FILES = ("webhook_receiver/received.jsonl", "notifier/notifications.jsonl")


def _repeats(home: Path) -> int:
    """Deliveries beyond the first of an alert on the same channel."""
    total = 0
    for path in _CHANNEL_FILES:
        keys = Counter(_key(line) for line in read_lines(home / path))
        total += sum(n - 1 for n in keys.values())
    return total


def _key(line: dict) -> tuple[str, str, int]:
    return next(iter(delivered([line])))


def _wait_notified(home: Path, planted: set[tuple[str, str, int]]) -> set[tuple[str, str, int]]:
    deadline = time.monotonic() + DRAIN_S
    while True:
        notified = set(delivered(_deliveries(home))) & planted
        if notified == planted or time.monotonic() > deadline:
            return notified
        time.sleep(1)


def _timed(deliveries: list[dict]) -> list[tuple[float, float]]:
    """(raw record's timestamp, delivered) in ms of every delivery that knows both."""
    found = []
    for line in deliveries:
        at, source = line.get("at_ms", line.get("delivered_ms")), line.get("source_ms")
        if at is not None and source is not None:
            found.append((float(source), float(at)))
    return found


def _flowing_again_s(deliveries: list[dict], killed_ms: float) -> float | None:
    """Seconds from the kill until a record sent after it was notified."""
    after = [at for source, at in _timed(deliveries) if source > killed_ms]
    return (min(after) - killed_ms) / 1000 if after else None


def _fault_p99(deliveries: list[dict], killed_ms: float) -> float | None:
    """Raw -> notification p99 (ms) of the records sent in the FAULT_WINDOW_S after the kill."""
    end = killed_ms + FAULT_WINDOW_S * 1000
    return nearest_rank([at - source for source, at in _timed(deliveries)
                         if killed_ms <= source < end], 99)  # fmt: skip


def _restarts(home: Path) -> dict[str, int]:
    """Each supervised service's restarts so far, by its process name."""
    found = {}
    for state in home.glob("*/supervisor.json"):
        child = supervised_child(LocalProcess(state.parent.name, home))
        if child is not None:
            found[state.parent.name] = child.restarts
    return found
