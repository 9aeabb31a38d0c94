"""``checkpoint_interval``: both sides of the routing checkpoint interval's trade, in one table.

Real-time routing ends its long-running batch, checkpoints and starts the next one every
interval (``MESH_INGEST_CHECKPOINT_INTERVAL``); each of those hand-overs pauses routing for a
moment, which is the tail of raw -> alert. A longer interval pauses less often, but a kill -9 of
ingest replays everything routed since the last checkpoint. Issue 49 asks for the default to be
chosen from both, measured the same way for 30, 120 and 300 s.

For each interval a private mesh is started with `mesh up` (its own home and topic prefix on the
run's broker, the interval in its environment), and a plain producer (:mod:`bench.plain_feed`)
feeds it 1 000 records/s from the moment `mesh up` says it can alert:

* **the tail**: raw -> records (every routed record: its ``mesh.source.timestamp`` header against
  its own timestamp) and raw -> alert (every alert, through its source record) p50 / p99 / max
  over the first TAIL_S seconds of the feed, and how many hand-overs (routing's commits) fell in
  them;
* **the kill**: once KILL_AT of an interval has passed since routing's last commit (read from its
  checkpoint's ``commits`` folder), ingest and its JVM are SIGKILLed as a machine's death would
  (:func:`testkit.service_kill.kill_service`); its supervisor restarts it while the feed goes
  on. Measured: records routed again (copies beyond the first, by the ``mesh.source``
  coordinates), seconds until routing went on, and seconds until raw -> records was back under
  RECOVERED_MS at p99 (the end of the first 5-second bucket of raw-record time after the kill
  whose p99 is under it), and each detector's alerts (distinct ids) before and after the kill.
  The plain feed plants only large amounts, so ``velocity`` alerts come from chance (five
  transactions of one customer within its minute) or from a replay: a record routed again is a
  new record to a stateful detector (a new offset), counted twice in its window.

``MESH_BENCH_E2E_SCALE`` multiplies TAIL_S; ``MESH_BENCH_CHECKPOINT_INTERVALS`` (e.g. ``30``) runs
only the intervals it names. The kill at 90 % of an interval is near the worst a
kill can cost (up to one whole interval of records); a kill at a random moment costs half that
on average.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.plain_feed import feed_plain
from bench.private_mesh import private_mesh
from bench.result import Result, percentile
from bench.scenarios.e2e_latency import alert_hops, scale, settled_alerts
from bench.scenarios.e2e_ramp import routed_written, written
from control.supervised_service import supervised_child
from services.ingest.config import IngestConfig
from shared.avro import AvroDeserializer
from shared.errors import MeshError
from shared.latency_picture import BUCKET_S, Bucket, buckets
from shared.lineage import SOURCE_HEADER, source_timestamp_ms
from shared.local_process import LocalProcess
from shared.settings import Settings
from shared.topic_names import TopicNames
from testkit.detector_runs import read_to_end
from testkit.service_kill import kill_service

#: The intervals compared, seconds.
INTERVALS_S = (30, 120, 300)
#: Records per second of the feed.
RATE = 1000
#: Seconds of feed, from "ready", that the tail is measured over (times the scale).
TAIL_S = 300.0
#: The kill comes this share of an interval after routing's last commit.
KILL_AT = 0.9
#: Raw -> records p99 under this is "back" after the kill.
RECOVERED_MS = 100.0
#: How long the feed goes on after the kill, for the restart, the replay and the catching up.
AFTER_KILL_S = 120.0
#: The longest wait for a commit of routing's before the kill.
COMMIT_TIMEOUT_S = 420.0


@dataclass(frozen=True)
class Routed:
    """What the records topic says about the run: raw -> records per first copy, and copies."""

    raw_at_ms: list[int]
    latency_ms: list[float]
    #: when each first copy was routed (its own timestamp), epoch ms
    routed_at_ms: list[int]
    copies_beyond_first: int
    #: the first record of any kind (a replayed copy too) routed after the kill, epoch ms
    first_after_kill_ms: int | None


def run_checkpoint_intervals(settings: Settings) -> list[Result]:
    return [_one_interval(settings, seconds, TAIL_S * scale()) for seconds in intervals()]


def intervals(environment: Mapping[str, str] = os.environ) -> tuple[int, ...]:
    """``MESH_BENCH_CHECKPOINT_INTERVALS`` (seconds, comma-separated; default INTERVALS_S): one
    row again without the others' half hour."""
    text = environment.get("MESH_BENCH_CHECKPOINT_INTERVALS", "").strip()
    if not text:
        return INTERVALS_S
    try:
        chosen = tuple(int(part) for part in text.split(","))
    except ValueError:
        chosen = ()
    if not chosen or min(chosen) < 5:
        raise MeshError(f"MESH_BENCH_CHECKPOINT_INTERVALS={text!r}: give whole seconds of at least "
                        "5 (Spark's minimum), comma-separated, such as 30,120")  # fmt: skip
    return chosen


def _one_interval(settings: Settings, interval_s: int, tail_s: float) -> Result:
    interval = f"{interval_s} seconds"
    with private_mesh(settings, "interval", MESH_INGEST_CHECKPOINT_INTERVAL=interval) as mesh:
        up_s = mesh.up()
        return _fed_and_killed(mesh.settings, interval_s, tail_s, up_s)


def _fed_and_killed(settings: Settings, interval_s: int, tail_s: float, up_s: float) -> Result:
    topic = TopicNames.of(settings).raw("transactions")
    commits = IngestConfig.from_settings(settings).checkpoints(settings) / "routing" / "commits"
    stop, delivered, failed = threading.Event(), [0], []

    def feed() -> None:
        try:
            delivered[0] = feed_plain(settings, topic, RATE, 24 * 3600, interval_s, stop).delivered
        except Exception as exc:  # said after the join: a run without its feed measures nothing
            failed.append(exc)

    feeder = threading.Thread(target=feed, daemon=True)
    feed_start_ms = int(time.time() * 1000)
    feeder.start()
    try:
        time.sleep(tail_s)
        tail_end_ms = int(time.time() * 1000)
        last_commit = _kill_moment(commits, interval_s)
        ingest = LocalProcess("ingest", settings.home)
        child = supervised_child(ingest)
        if not kill_service(ingest):
            raise RuntimeError("no ingest job under its supervisor to kill")
        killed_ms = int(time.time() * 1000)
        since_commit_s = killed_ms / 1000 - (_last_commit_at(commits) or last_commit)
        time.sleep(AFTER_KILL_S)
        restarted = supervised_child(ingest)
        if (restarted is None or child is None or restarted.pid is None
                or restarted.restarts <= child.restarts):  # fmt: skip
            raise RuntimeError("the supervisor did not start ingest again after the kill")
    finally:
        stop.set()
        feeder.join(60)
    if failed:
        raise RuntimeError(f"the feed failed: {failed[0]}")
    _settled_routing(settings, delivered[0])
    records = TopicNames.of(settings).records("transactions")
    messages = read_to_end(settings, records, 300)
    if len(messages) < (on_topic := written(settings, [records])):
        raise RuntimeError(f"read {len(messages):,} of the {on_topic:,} routed records")
    routed = routed_copies(messages, killed_ms)
    alerts = settled_alerts(settings)
    # The tail's alerts: before the kill, so no replayed copy's alert (timed from the copy)
    hops = alert_hops(settings, [a for a in alerts if a[1] < killed_ms], feed_start_ms)
    decode = AvroDeserializer("alert").decode
    split = alerts_around([(decode(m.value()), at) for m, at in alerts], killed_ms)
    return _result(interval_s, tail_s, up_s, routed, hops, split, commits,
                   (feed_start_ms, tail_end_ms, killed_ms), since_commit_s)  # fmt: skip


def _settled_routing(settings: Settings, delivered: int, quiet_s: float = 10.0) -> int:
    """Records routed once ingest is done with the feed: at least ``delivered`` (a replay's
    copies count too, so that alone is not the end) and unchanged for ``quiet_s``."""
    deadline = time.monotonic() + 300
    last, since = routed_written(settings), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = routed_written(settings)
        if now != last:
            last, since = now, time.monotonic()
        elif now >= delivered and time.monotonic() - since >= quiet_s:
            return now
    raise RuntimeError(f"ingest routed {last:,} records, {delivered:,} delivered, and still moved")


def _kill_moment(commits: Path, interval_s: int) -> float:
    """Waits until KILL_AT of an interval has passed since routing's last commit; that commit's
    time. A commit already too old (the kill's moment passed) waits for the next one."""
    deadline = time.monotonic() + COMMIT_TIMEOUT_S
    while time.monotonic() < deadline:
        last = _last_commit_at(commits)
        if last is not None:
            wait = last + KILL_AT * interval_s - time.time()
            if wait > 0:
                time.sleep(wait)
                if _last_commit_at(commits) == last:
                    return last
        time.sleep(0.5)
    raise RuntimeError(f"routing committed nothing within {COMMIT_TIMEOUT_S:.0f} s")


def _last_commit_at(commits: Path) -> float | None:
    """When routing last committed a batch (the newest commit file's time, epoch seconds)."""
    times = [f.stat().st_mtime for f in commits.glob("[0-9]*")] if commits.is_dir() else []
    return max(times, default=None)


def routed_copies(messages: list[Any], killed_ms: int) -> Routed:
    """Raw -> records for the first copy of each raw record (by its ``mesh.source``
    coordinates), how many copies came beyond the first (a replay's), and when routing went on
    after ``killed_ms``."""
    seen: Counter = Counter()
    raw_at, latency, routed_at = [], [], []
    after_kill: int | None = None
    for message in messages:
        at = message.timestamp()[1]
        if at > killed_ms and (after_kill is None or at < after_kill):
            after_kill = at
        source = dict(message.headers() or []).get(SOURCE_HEADER)
        raw_ms = source_timestamp_ms(message.headers())
        if source is None or raw_ms is None:
            continue
        seen[source] += 1
        if seen[source] > 1:
            continue
        raw_at.append(raw_ms)
        latency.append(float(at - raw_ms))
        routed_at.append(at)
    return Routed(raw_at, latency, routed_at, sum(seen.values()) - len(seen), after_kill)


def alerts_around(alerts: list[tuple[dict[str, Any], int]], at_ms: int) -> dict[str, list[int]]:
    """Per detector, its distinct alert ids raised before and after ``at_ms`` (by the alert's
    Kafka timestamp); a replay's copy of an alert (the same id) counts once, where it came
    first."""
    first: dict[str, tuple[str, int]] = {}
    for alert, when in alerts:
        known = first.get(alert["alert_id"])
        if known is None or when < known[1]:
            first[alert["alert_id"]] = (alert["detector"], when)
    split: dict[str, list[int]] = {}
    for detector, when in first.values():
        split.setdefault(detector, [0, 0])[when >= at_ms] += 1
    return split


def back_under(
    series: list[Bucket], origin_ms: int, after_ms: int, bound_ms: float
) -> float | None:
    """Seconds from ``after_ms`` to the end of the first bucket (of raw-record time since
    ``origin_ms``) that starts after it and whose p99 is under ``bound_ms``; None if none is."""
    for bucket in series:
        start_ms = origin_ms + bucket.start_s * 1000
        if start_ms >= after_ms and bucket.p99_ms < bound_ms:
            return (start_ms + BUCKET_S * 1000 - after_ms) / 1000
    return None


def within(raw_at: list[int], values: list[float], start_ms: int, end_ms: int) -> list[float]:
    """The values whose raw record reached Kafka in [start_ms, end_ms)."""
    return [v for at, v in zip(raw_at, values, strict=True) if start_ms <= at < end_ms]


def _result(
    interval_s: int,
    tail_s: float,
    up_s: float,
    routed: Routed,
    hops: Any,
    alerts: dict[str, list[int]],
    commits: Path,
    moments: tuple[int, int, int],
    since_commit_s: float,
) -> Result:
    feed_start_ms, tail_end_ms, killed_ms = moments
    tail = within(routed.raw_at_ms, routed.latency_ms, feed_start_ms, tail_end_ms)
    tail_alerts = within(hops.raw_at, hops.total, feed_start_ms, tail_end_ms)
    handovers = sum(
        1 for f in commits.glob("[0-9]*") if feed_start_ms <= f.stat().st_mtime * 1000 < tail_end_ms
    )
    series = buckets(routed.raw_at_ms, routed.latency_ms, feed_start_ms)
    back_s = back_under(series, feed_start_ms, killed_ms, RECOVERED_MS)
    after = routed.first_after_kill_ms
    again = None if after is None else (after - killed_ms) / 1000
    figures = {
        "interval_s": float(interval_s),
        "tail_minutes": tail_s / 60,
        "raw_to_records_p50_ms": percentile(tail, 50) or 0.0,
        "raw_to_records_p99_ms": percentile(tail, 99) or 0.0,
        "raw_to_records_max_ms": max(tail, default=0.0),
        "raw_to_alert_p50_ms": percentile(tail_alerts, 50) or 0.0,
        "raw_to_alert_p99_ms": percentile(tail_alerts, 99) or 0.0,
        "raw_to_alert_max_ms": max(tail_alerts, default=0.0),
        "handovers_in_tail": float(handovers),
        "kill_after_commit_s": since_commit_s,
        "replayed_records": float(routed.copies_beyond_first),
        "routing_again_after_kill_s": -1.0 if again is None else again,
        "back_under_100ms_after_kill_s": -1.0 if back_s is None else back_s,
        "mesh_up_s": up_s,
        **{f"{name}_alerts_before_kill": float(n[0]) for name, n in alerts.items()},
        **{f"{name}_alerts_after_kill": float(n[1]) for name, n in alerts.items()},
    }
    by_detector = ", ".join(f"{name} {n[0]}/{n[1]}" for name, n in sorted(alerts.items()))
    return Result(
        f"checkpoint_{interval_s}s",
        len(routed.latency_ms),
        (max(routed.routed_at_ms, default=feed_start_ms) - feed_start_ms) / 1000,
        latency_p50_ms=figures["raw_to_records_p50_ms"],
        latency_p99_ms=figures["raw_to_records_p99_ms"],
        notes=(
            f"interval {interval_s} s at {RATE:,}/s; first {tail_s / 60:.1f} min after ready: "
            f"raw->records p50/p99/max {_ms(figures, 'raw_to_records')}, raw->alert "
            f"{_ms(figures, 'raw_to_alert')} ({len(tail_alerts)} alerts), {handovers} hand-overs; "
            f"kill -9 {since_commit_s:.0f} s after a commit: {routed.copies_beyond_first:,} "
            f"records routed again, routing again after {_s(again)}, raw->records p99 under "
            f"{RECOVERED_MS:.0f} ms after {_s(back_s)}; alerts before/after the kill: "
            f"{by_detector or 'none'}; mesh up {up_s:.0f} s"
        ),
        extra=figures,
        paced=True,
    )


def _ms(figures: dict[str, float], hop: str) -> str:
    return "/".join(f"{figures[f'{hop}_{q}_ms']:.0f}" for q in ("p50", "p99", "max")) + " ms"


def _s(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.1f} s"
