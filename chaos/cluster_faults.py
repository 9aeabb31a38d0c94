"""Cases 16-22: a broker of three lost, hung, the controller killed, every node restarted, all
under load on the whole mesh (issue 48).

Each case is `mesh up --brokers 3` on a MESH_HOME of its own (a local KRaft cluster, every topic
at replication 3 and min.insync.replicas 2), `mesh produce` feeding raw transactions and logins
with planted frauds, and its fault at a share of the feed:

16. ``cluster_broker_kill``: SIGKILL of the node leading the most partitions, not restarted (on
    one broker with replication 1 this lost 61 of 102 planted frauds);
17. ``cluster_broker_hang``: the node leading the most partitions SIGSTOPped for 30 s, then
    SIGCONT (its sockets stay open: clients wait on it instead of failing over at once);
18. ``cluster_controller_kill``: SIGKILL of the active KRaft controller, not restarted;
19. ``cluster_rolling_restart``: an operator's upgrade, each node in turn stopped gracefully
    (`mesh broker stop --node N`), started again, and caught up before the next;
20. ``cluster_leaderless_alerts``: ``alerts`` declared with replication 1, the node leading the
    most of its partitions SIGKILLed and started again HELD_S later: those partitions have no
    leader meanwhile. Degrade, never stop: the detectors hold back only the input partitions
    whose alerts cannot be delivered (`mesh status` says which), alerts of the others flow on,
    and once the node is back everything held back is processed again and notified.
21. ``cluster_leaderless_notifications``: the same with ``notifications`` at replication 1: the
    notifier holds back the alerts partitions whose notifications partition (the alerts
    partition modulo their count) is lost, delivers the others' alerts, and after the node is
    back restores and delivers the held ones, each once.
22. ``cluster_leaderless_raw``: the same with ``raw.transactions`` at replication 1: ingest
    hands routing over without the lost raw partitions 15 s after they lost their leader
    (:mod:`services.ingest.routing_degrade`), routes the others meanwhile, and takes the lost
    ones back where they were left once the node is back; a handover's stopped batch may be
    routed again, as a kill's (its mark, :func:`chaos.replay_scope.handover_marks`).

The short form in `make test` runs one mesh with three of them in a row (a mesh start is ~60 s
of JVMs on two cores): the hang, the controller killed and brought back (it must catch up), then
the busiest node killed for good; and meanwhile, at seeded random times, a detector replica,
ingest and the notifier each SIGKILLed once (:mod:`chaos.service_kills`). The verdict, each from
what a user can see:

* **nothing acknowledged lost**: every raw record the broker acknowledged is routed (valid ones
  to the records topics, invalid ones to their dead letters: by offsets, `mesh up`'s probes
  subtracted); duplicates only what a killed ingest had routed beyond its committed checkpoint
  (:mod:`chaos.replay_scope`);
* **the ledger** (:mod:`chaos.ledger`): every planted fraud reaches every channel its alert is
  routed to exactly once, a repeat only of a delivery still in flight (not yet recorded in the
  notifier's changelog); after the drain REPLAYED_ALERTS alerts are written again, as a
  detector's replay would, so the notifier's suppression is put to the test every run (a book
  that forgot finished deliveries fails here: docs/reliability.md);
* **degrade, never stop**: no supervised service restarted but those killed, once each, and
  `mesh status` during a loss says which node is lost;
* **each fault mid-run**: after the first planted fraud was notified, while the feed still sent.
  A fault is due at its share of the feed's nominal length, but it starts only once the one
  before it is over, and a restarted node's catching up has taken 84 s on a busy machine (its
  log recovery alone 23 s): the short form's last fault then came after a fixed-length feed had
  ended. So `mesh produce` is asked for up to FEED_HEADROOM times the feed and told to stop
  (SIGTERM: it flushes and reports what it sent) once the nominal length has passed and the
  last fault has been over for FAULT_WINDOW_S, whose records are that fault's figures.

Figures: sent, acknowledged, routed, alerted, notified, lost, duplicated (routed beyond
acknowledged, webhook deliveries beyond one per alert), and per fault the time until a record
sent after it was notified and raw -> notification p99 and max of the records of its window.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from chaos.case_run import DRAIN_S, Load
from chaos.cluster_mesh import (
    SEED,
    ClusterMesh,
    Planted,
    flowing_again_s,
    produced,
    timed,
    window_latency,
)
from chaos.ledger import Ledger, ledger
from chaos.replay_scope import handover_marks, replay_verdict
from chaos.report import CaseResult
from chaos.service_kills import KillLog, ServiceKill, ServiceKiller, mixed_kills
from chaos.smoke import SmokeFigures
from control.launch.notifier import SHIPPED_RULES
from hosting.servers.kafka_cluster import LocalKafka
from services.notifier.rules import load_rules
from shared.endpoints import resolve_bootstrap
from shared.kafka.cluster_health import read_cluster_health
from shared.pids import wait_gone
from shared.settings import Settings

#: How long a hung node stays stopped (issue 48).
HANG_S = 30.0
#: The longest window after a fault whose records' notification latency is its "during" figure.
FAULT_WINDOW_S = 30.0
#: The records `mesh produce` is asked for, as a multiple of the nominal feed: room for faults
#: that end late; the case stops the feed itself (see "each fault mid-run").
FEED_HEADROOM = 3.0
#: How long `mesh status` may take to say a killed node is lost.
LOST_WITHIN_S = 30.0
#: How long a restarted node may take to be back in every ISR.
CATCH_UP_S = 120.0
#: How long case 20's node stays down: past the detectors' delivery timeout (30 s), so they find
#: the loss and hold partitions back, and long enough to see the others' alerts flow meanwhile.
HELD_S = 75.0
#: How long after the kill `mesh status` may take to show a held-back partition: the delivery
#: timeout, the commit that finds it, a status refresh.
HELD_WITHIN_S = 60.0

#: Alerts written again once every planted fraud was notified (already delivered, so a notifier
#: that forgot them would tell a person twice: the ledger fails it).
REPLAYED_ALERTS = 200


class ClusterRun:
    """One case's mesh while it runs: the faults' shared moves and what they noted."""

    def __init__(self, mesh: ClusterMesh, bootstrap: str) -> None:
        self.mesh, self.bootstrap = mesh, bootstrap
        self.kafka = LocalKafka(mesh.settings)
        self.notes: list[str] = []
        self.failures: list[str] = []

    def pid_of(self, node: int) -> int:
        for state in self.kafka.states():
            if state.node == node and state.info is not None:
                return state.info.pid
        raise RuntimeError(f"node {node} of the case's cluster is not running")

    def kill(self, node: int) -> None:
        pid = self.pid_of(node)
        os.kill(pid, signal.SIGKILL)
        if not wait_gone(pid, 30):
            self.failures.append(f"node {node} survived SIGKILL")

    def expect_lost(self, node: int) -> None:
        """`mesh status` says the node is lost, once the cluster has noticed (its fencing is
        5 s: CLUSTER_FAILURE_DETECTION); asked again every second, for at most LOST_WITHIN_S."""
        began = time.monotonic()
        while True:
            status = self.mesh.run("status", timeout=120)
            if f"node {node} LOST" in status.stdout:
                waited = time.monotonic() - began
                self.notes.append(f"`mesh status` said node {node} LOST {waited:.0f} s after it")
                return
            if time.monotonic() - began > LOST_WITHIN_S:
                self.failures.append(f"`mesh status` did not say node {node} LOST within "
                                     f"{LOST_WITHIN_S:.0f} s: {status.stdout[:300]!r}")  # fmt: skip
                return
            time.sleep(1)

    def expect_held_back(self) -> float | None:
        """`mesh status` names the input partitions a detector holds back (a partition of theirs
        lost its leader), within HELD_WITHIN_S; when it first did (epoch ms), None if not."""
        began = time.monotonic()
        while True:
            status = self.mesh.run("status", timeout=120)
            held = [line.strip() for line in status.stdout.splitlines() if "held back:" in line]
            if held:
                waited = time.monotonic() - began
                self.notes.append(f"`mesh status` {waited:.0f} s after the kill: {held[0]}")
                return time.time() * 1000
            if time.monotonic() - began > HELD_WITHIN_S:
                self.failures.append(
                    f"`mesh status` named no held-back partition within {HELD_WITHIN_S:.0f} s: "
                    f"{status.stdout[-600:]!r}"
                )
                return None
            time.sleep(2)

    def bring_back(self, node: int) -> None:
        """`mesh broker start --node N`, then wait until the node is back in every ISR."""
        started = self.mesh.run("broker", "start", "--node", str(node), timeout=180)
        if started.returncode != 0:
            self.failures.append(f"mesh broker start --node {node}: {started.stderr[-300:]}")
            return
        began = time.monotonic()
        while time.monotonic() - began < CATCH_UP_S:
            if read_cluster_health(self.bootstrap).whole:
                waited = time.monotonic() - began
                self.notes.append(f"node {node} back in every ISR {waited:.0f} s after it answered")
                return
            time.sleep(1)
        self.failures.append(f"node {node} was not back in every ISR {CATCH_UP_S:.0f} s after "
                             "it started again")  # fmt: skip


@dataclass(frozen=True)
class Fault:
    """One fault of a case: when it starts (a share of the feed) and what it does; ``act``
    returns once the fault is over (a hung node resumed, a restarted one caught up)."""

    name: str
    at: float
    act: Callable[[ClusterRun], str]


def kill_busiest(run: ClusterRun) -> str:
    node, led = run.mesh.busiest_node(run.bootstrap)
    run.kill(node)
    run.expect_lost(node)
    return f"node {node} (leading {led} partitions) SIGKILLed, not restarted"


def hang_busiest(run: ClusterRun) -> str:
    node, led = run.mesh.busiest_node(run.bootstrap)
    pid = run.pid_of(node)
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(HANG_S)
    finally:
        os.kill(pid, signal.SIGCONT)
    return f"node {node} (leading {led} partitions) SIGSTOPped {HANG_S:.0f} s, then SIGCONT"


def kill_controller(run: ClusterRun, restart: bool = False) -> str:
    """SIGKILL of the active KRaft controller; ``restart`` starts it again and waits until it
    caught up (the short form's later fault needs two nodes)."""
    node = run.kafka.active_controller()
    if node is None:
        raise RuntimeError("no node of the case's cluster says which controller leads")
    run.kill(node)
    if not restart:
        run.expect_lost(node)
        return f"active controller node {node} SIGKILLed, not restarted"
    run.bring_back(node)
    return f"active controller node {node} SIGKILLed, started again"


def lose_leader(run: ClusterRun, topic: str) -> str:
    """Cases 20 and 21's fault (see the module docstring): the node leading the most of
    ``topic``'s partitions (one replica each) killed; returns once it is back in every ISR."""
    node, led = run.mesh.busiest_node(run.bootstrap, topic=topic)
    run.kill(node)
    killed = time.monotonic()
    held_ms = run.expect_held_back()
    time.sleep(max(killed + HELD_S - time.monotonic(), 0))
    if held_ms is not None:  # alerts of the partitions not held back kept reaching people
        flowing = [at for source, at in timed(run.mesh.deliveries()) if source >= held_ms]
        run.notes.append(f"{len(flowing)} notifications of records sent while partitions were "
                         "held back, before the node came back")  # fmt: skip
        if not flowing:
            run.failures.append("no notification of a record sent while partitions were held "
                                "back: the partitions with a leader stopped too")  # fmt: skip
    run.bring_back(node)
    return (f"node {node} (leading {led} of {topic}'s partitions, one replica each) SIGKILLed, "
            f"started again {time.monotonic() - killed:.0f} s later")  # fmt: skip


def rolling_restart(run: ClusterRun) -> str:
    for node in sorted(n.node for n in run.kafka.states()):
        stopped = run.mesh.run("broker", "stop", "--node", str(node), timeout=120)
        if stopped.returncode != 0:
            run.failures.append(f"mesh broker stop --node {node}: {stopped.stderr[-300:]}")
        run.bring_back(node)
    return "every node stopped gracefully, started again and caught up, one at a time"


def cluster_broker_kill(settings: Settings, work: Path, short: bool) -> CaseResult:
    if short:  # one mesh for three faults: see the module's docstring
        faults = [Fault("hang", 0.12, hang_busiest),
                  Fault("controller kill", 0.5, partial(kill_controller, restart=True)),
                  Fault("busiest kill", 0.75, kill_busiest)]  # fmt: skip
        kills = mixed_kills(int(SEED))
        return _run("cluster_broker_kill", settings, work, Load(105.0, 400.0), faults, kills)
    return _run("cluster_broker_kill", settings, work, LONG, [Fault("kill", 0.4, kill_busiest)])


def cluster_broker_hang(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _run("cluster_broker_hang", settings, work, LONG, [Fault("hang", 0.3, hang_busiest)])


def cluster_controller_kill(settings: Settings, work: Path, short: bool) -> CaseResult:
    faults = [Fault("controller kill", 0.4, kill_controller)]
    return _run("cluster_controller_kill", settings, work, LONG, faults)


def cluster_rolling_restart(settings: Settings, work: Path, short: bool) -> CaseResult:
    faults = [Fault("rolling restart", 0.2, rolling_restart)]
    return _run("cluster_rolling_restart", settings, work, LONG, faults)


def cluster_leaderless_alerts(settings: Settings, work: Path, short: bool) -> CaseResult:
    faults = [Fault("alerts' leader lost", 0.2, partial(lose_leader, topic="alerts"))]
    return _run("cluster_leaderless_alerts", settings, work, LONG, faults, one_replica=("alerts",))


def cluster_leaderless_notifications(settings: Settings, work: Path, short: bool) -> CaseResult:
    lost = Fault("notifications' leader lost", 0.2, partial(lose_leader, topic="notifications"))
    return _run("cluster_leaderless_notifications", settings, work, LONG, [lost],
                one_replica=("notifications",))  # fmt: skip


def cluster_leaderless_raw(settings: Settings, work: Path, short: bool) -> CaseResult:
    lost = Fault("raw's leader lost", 0.2, partial(lose_leader, topic="raw.transactions"))
    return _run("cluster_leaderless_raw", settings, work, LONG, [lost],
                one_replica=("raw.transactions",))  # fmt: skip


#: `make chaos`'s feed for a cluster case: the whole mesh on two cores takes less than the echo
#: cases' rates (at 800/s it fell minutes behind with no fault at all; docs/reliability.md).
LONG = Load(180.0, 400.0)


def _run(
    name: str,
    settings: Settings,
    work: Path,
    feed: Load,
    faults: list[Fault],
    kills: list[ServiceKill] | None = None,
    one_replica: tuple[str, ...] = (),
) -> CaseResult:
    mesh = ClusterMesh(settings, work / "cluster-mesh", one_replica)
    up = mesh.run("up", "--brokers", "3", timeout=600)
    try:
        if up.returncode != 0:
            why = f"mesh up --brokers 3 failed: {(up.stdout + up.stderr)[-400:]}"
            return CaseResult(name, SmokeFigures(0, 0, 0, 0, 0, 0), None, False, 0, 0, [], [why])
        return _feed_through(name, mesh, feed, faults, kills or [])
    finally:
        mesh.run("down", timeout=300)


def _feed_through(
    name: str, mesh: ClusterMesh, feed: Load, faults: list[Fault], kills: list[ServiceKill]
) -> CaseResult:
    """Feed, apply each fault at its time (the services' kills in a thread of their own),
    drain, and judge."""
    bootstrap = resolve_bootstrap(mesh.settings)
    run = ClusterRun(mesh, bootstrap)
    before = mesh.routed(bootstrap)
    started = time.monotonic()
    producer = mesh.produce(int(feed.seconds * feed.rate * FEED_HEADROOM), feed.rate)
    windows: list[tuple[str, float, float]] = []  # (fault, started_ms, over_ms)
    mid_run = True
    restarts_before = mesh.restarts()
    killer = ServiceKiller(mesh, bootstrap, kills, (started, feed.seconds, producer))
    killer.start()
    try:
        for fault in faults:
            time.sleep(max(started + feed.seconds * fault.at - time.monotonic(), 0))
            mesh.await_first_delivery(producer)
            mid_run &= bool(mesh.deliveries()) and producer.poll() is None
            began_ms = time.time() * 1000
            run.notes.append(f"{fault.name} at {time.monotonic() - started:.0f} s of the feed: "
                             + fault.act(run))  # fmt: skip
            windows.append((fault.name, began_ms, time.time() * 1000))
    except BaseException:
        killer.stop()
        raise
    killer.join()
    kill_log = killer.log
    time.sleep(max(started + feed.seconds - time.monotonic(), FAULT_WINDOW_S))
    producer.send_signal(signal.SIGTERM)  # ended on its own (all it was asked for): not mid-run
    fed_s = time.monotonic() - started
    output, _ = producer.communicate(timeout=int(feed.seconds) * 3 + 120)
    run.notes.append(f"the feed stopped after {fed_s:.0f} s (nominal {feed.seconds:.0f} s), "
                     f"{FAULT_WINDOW_S:.0f} s or more after the last fault was over")  # fmt: skip
    mid_run &= kill_log.mid_run and (producer.returncode == 0 or "acknowledged" in output)
    sent, acknowledged = produced(output)
    planted = mesh.planted()
    notified = mesh.wait_notified(planted)
    replayed, unacknowledged = mesh.replay_alerts(REPLAYED_ALERTS)
    if unacknowledged:
        run.failures.append(f"{unacknowledged} of the {replayed} replayed alerts were not "
                            "acknowledged within 30 s")  # fmt: skip
    elif not mesh.notifier_caught_up(bootstrap, DRAIN_S):
        run.failures.append(f"the notifier did not take the {replayed} replayed alerts")
    run.notes.append(f"{replayed} alerts written again after the drain (a detector's replay): "
                     "the notifier must suppress each")  # fmt: skip
    book = _settled_ledger(mesh, planted)
    routed, dead_lettered = (a - b for a, b in zip(mesh.routed(bootstrap), before, strict=True))
    routing = _routing_ledger(run, mesh, kill_log)
    run.failures += (
        kill_log.failures
        + book.failures
        + _restart_failures(mesh.restarted_since(restarts_before), kill_log.killed)
    )
    missing = planted - notified
    deliveries = mesh.deliveries()
    recover = _fault_figures(run, deliveries, windows)
    _fault_figures(run, deliveries, [(what, at, at) for what, at in kill_log.at_ms])
    run.notes += kill_log.notes
    routed, dead_lettered = routed - routing.again_valid, dead_lettered - routing.again_invalid
    run.notes.append(
        f"routed {routed} + {dead_lettered} dead-lettered of {acknowledged} acknowledged (once "
        f"each; {routing.again_valid} + {routing.again_invalid} copies more); "
        f"alerts {mesh.alerts(bootstrap)}; planted notified {len(notified & planted)} of "
        f"{len(planted)}"
    )
    run.notes += book.table()
    figures = SmokeFigures(
        sent=sent, acknowledged=acknowledged, seen=routed,
        lost=routing.unrouted + len(missing), duplicated=routing.duplicated, out_of_order=0,
        dead_lettered=dead_lettered,
    )  # fmt: skip
    return CaseResult(name, figures, recover, mid_run, routing.allowed, 0, run.notes, run.failures)


def _settled_ledger(mesh: ClusterMesh, planted: Planted) -> Ledger:
    """The ledger once no planted fraud is missing on any channel (a webhook retry may still
    be due when the audit log has every alert) or DRAIN_S is up, judged against when the
    notifier recorded each delivery (its changelog, read once at the end)."""
    routing = load_rules(SHIPPED_RULES)

    def route(alert: Mapping[str, Any]) -> list[str]:
        return [channel.name for channel in routing.route(alert)[1]]

    deadline = time.monotonic() + DRAIN_S
    while True:
        channels = mesh.channels()
        book = ledger(planted, channels["audit-log"], channels, route, {})
        if all(hop.missing == 0 for hop in book.hops) or time.monotonic() > deadline:
            break
        time.sleep(1)
    channels = mesh.channels()
    return ledger(planted, channels["audit-log"], channels, route, mesh.recorded_deliveries())


class RoutingLedger(NamedTuple):
    #: raw records acknowledged and never routed
    unrouted: int
    #: copies beyond the first, in all, to the records topics and to the dead letters
    duplicated: int
    again_valid: int
    again_invalid: int
    #: the copies beyond the first a killed ingest may have made
    allowed: int


def _routing_ledger(run: ClusterRun, mesh: ClusterMesh, kills: KillLog) -> RoutingLedger:
    """Every raw record the cluster acknowledged against its routed copies, by coordinates. A
    killed ingest, or a routing handover that stopped a batch, may repeat what it had routed
    beyond its committed checkpoint, once (:mod:`chaos.replay_scope`); nothing else may be
    repeated."""
    routings = mesh.routings(run.bootstrap)
    copies = Counter(routing.source for routing in routings)
    unrouted = len(mesh.raw_coordinates(run.bootstrap) - copies.keys())
    invalid = [r.source for r in routings if r.topic == "records.invalid"]
    valid = [r.source for r in routings if r.topic != "records.invalid"]
    again_valid, again_invalid = len(valid) - len(set(valid)), len(invalid) - len(set(invalid))
    allowed = 0
    marks = [("ingest kill", mark) for mark in kills.ingest_marks] + [
        ("routing handover", mark) for mark in handover_marks(mesh.routing_checkpoint().parent)
    ]
    for what, mark in marks:
        replays = replay_verdict(mark, routings)
        run.failures += replays.failures
        run.notes.append(f"{what}: {replays.replayable} records routed beyond its committed "
                         f"checkpoint, {replays.replayed} routed again")  # fmt: skip
        allowed += replays.replayable
    duplicated = sum(n - 1 for n in copies.values())
    return RoutingLedger(unrouted, duplicated, again_valid, again_invalid, allowed)


def _restart_failures(restarted: dict[str, int], killed: dict[str, int]) -> list[str]:
    """Every killed service restarted exactly as often as it was killed, and no other."""
    if restarted == killed:
        return []
    told = ", ".join(f"{name} {n}x" for name, n in sorted(restarted.items())) or "none"
    return [f"restarted during the faults: {told}; only the killed ones may, once per kill "
            f"({', '.join(sorted(killed)) or 'none'})"]  # fmt: skip


def _fault_figures(
    run: ClusterRun, deliveries: list[dict], windows: list[tuple[str, float, float]]
) -> float | None:
    """A note per fault (flowing again after it, p99 and max of its window's records); the
    slowest flowing-again, None if after some fault nothing flowed again."""
    slowest: float | None = 0.0
    for i, (name, began_ms, _over_ms) in enumerate(windows):
        end_ms = began_ms + FAULT_WINDOW_S * 1000
        if i + 1 < len(windows):
            end_ms = min(end_ms, windows[i + 1][1])
        flowing = flowing_again_s(deliveries, began_ms)
        latency = window_latency(deliveries, began_ms, end_ms)
        run.notes.append(
            f"{name}: notifications flowing again "
            + (f"{flowing:.1f} s after it began" if flowing is not None else "never")
            + (f"; raw -> notification p99 {latency[0]:.0f} ms, max {latency[1]:.0f} ms for "
               f"records of the {(end_ms - began_ms) / 1000:.0f} s after"
               if latency is not None else "")
        )  # fmt: skip
        slowest = None if flowing is None or slowest is None else max(slowest, flowing)
    return slowest
