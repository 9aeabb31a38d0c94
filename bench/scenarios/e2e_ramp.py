"""The whole mesh's ceiling: the highest offered rate at which every stage keeps up.

Run on a mesh `mesh up` started (e2e_latency does it, after its paced runs). The plain feed
(:mod:`bench.plain_feed`) offers each rate of RAMP_RATES for HOLD_S seconds while the backlog of
every stage is sampled: ingest's (raw records not routed yet) and each running detector group's
lag. A rate is sustained when no stage's backlog at the end of the hold is more than one second
of input above its value a third into the hold (a queue that only wobbles, not one that grows).
The ramp stops at the first rate that is not, lets the backlog drain, and the ceiling is the last
sustained rate.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from bench.plain_feed import feed_plain
from bench.result import Result
from control.readiness import running_readers
from shared.kafka.inspect import group_lag, topic_views
from shared.kafka.security import client_security
from shared.settings import Settings
from shared.topic_names import TopicNames

RAMP_RATES = (2000, 4000, 6000, 8000, 10000)
#: Seconds each rate is held (issue 29 asks flat for 5 minutes at the ceiling: set
#: MESH_BENCH_E2E_SCALE=5 for that; the default keeps `make bench` within its time).
HOLD_S = 60.0
SAMPLE_S = 5.0
#: After the ramp stops: the longest wait for the backlog to drain.
DRAIN_TIMEOUT_S = 300.0


@dataclass
class Step:
    rate: int
    delivered: int = 0
    seconds: float = 0.0
    #: (seconds into the hold, backlog per stage)
    samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)

    def growth(self) -> dict[str, int]:
        """Per stage: backlog at the end minus backlog a third into the hold."""
        if len(self.samples) < 2:
            return {}
        third = next(
            s for t, s in self.samples if t >= self.seconds / 3 or s is self.samples[-1][1]
        )
        last = self.samples[-1][1]
        return {stage: last[stage] - third.get(stage, 0) for stage in last}

    @property
    def sustained(self) -> bool:
        return all(grown <= self.rate for grown in self.growth().values())


def run_ramp(settings: Settings, hold_s: float = HOLD_S) -> list[Result]:
    steps: list[Step] = []
    for seed, rate in enumerate(RAMP_RATES, start=500):
        routed_before, raw_before = routed_written(settings), raw_written(settings)
        step = _hold(settings, rate, seed, hold_s, raw_before, routed_before)
        steps.append(step)
        growth = ", ".join(f"{k} {v:+,}" for k, v in step.growth().items())
        print(f"ramp {rate:,}/s: offered {step.delivered / max(step.seconds, 1e-9):,.0f}/s, "
              f"backlog growth over the hold's last two thirds: {growth} -> "
              f"{'sustained' if step.sustained else 'NOT sustained'}", flush=True)  # fmt: skip
        _drain(settings, raw_before, routed_before)
        if not step.sustained:
            break
    ceiling = max((s.rate for s in steps if s.sustained), default=0)
    notes = "; ".join(f"{s.rate:,}/s {'ok' if s.sustained else 'falls behind'}" for s in steps)
    return [Result("e2e_ceiling", sum(s.delivered for s in steps),
                   sum(s.seconds for s in steps), notes=f"ceiling {ceiling:,}/s offered ({notes}; "
                   f"{hold_s:.0f} s per rate, plain JSON feed)",
                   extra={"ceiling_per_s": float(ceiling)}, paced=True)]  # fmt: skip


def _hold(
    settings: Settings, rate: int, seed: int, hold_s: float, raw_before: int, routed_before: int
) -> Step:
    """Offer ``rate`` for ``hold_s`` seconds, sampling every stage's backlog meanwhile."""

    step = Step(rate)
    done = threading.Event()
    raw_topic = TopicNames.of(settings).raw("transactions")

    def feed() -> None:
        report = feed_plain(settings, raw_topic, rate, hold_s, seed)
        step.delivered, step.seconds = report.delivered, report.seconds
        done.set()

    started = time.monotonic()
    threading.Thread(target=feed, daemon=True).start()
    while True:
        finished = done.wait(SAMPLE_S)
        sample = _backlogs(settings, raw_before, routed_before)
        step.samples.append((time.monotonic() - started, sample))
        if finished:
            return step


def raw_written(settings: Settings) -> int:
    """Records ever written to the raw topics."""
    names = TopicNames.of(settings)
    return written(settings, [names.raw(t) for t in ("transactions", "logins")])


def routed_written(settings: Settings) -> int:
    """Records ever routed by ingest: the records topics and its dead letters."""
    names = TopicNames.of(settings)
    topics = [names.records(t) for t in ("transactions", "logins")] + [names.invalid]
    return written(settings, topics)


def written(settings: Settings, topics: list[str]) -> int:
    """Records ever written to ``topics`` (their end offsets, deleted records included)."""
    views = topic_views(settings.bootstrap_servers, topics, login=client_security(settings))
    return sum(view.written for view in views)


def _backlogs(settings: Settings, raw_before: int, routed_before: int) -> dict[str, int]:
    """Records each stage has yet to take: ingest's (raw not routed yet), each detector group's."""
    backlog = {
        "ingest": (raw_written(settings) - raw_before) - (routed_written(settings) - routed_before)
    }
    for reader in running_readers(settings):
        try:
            lag = group_lag(settings.bootstrap_servers, reader.group, list(reader.topics),
                            timeout=5, login=client_security(settings)).total  # fmt: skip
        except Exception:  # a coordinator busy for a moment: that sample goes without it
            continue
        backlog[reader.name] = lag
    return backlog


def _drain(settings: Settings, raw_before: int, routed_before: int) -> None:
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while time.monotonic() < deadline:
        if all(v <= 0 for v in _backlogs(settings, raw_before, routed_before).values()):
            return
        time.sleep(SAMPLE_S)
