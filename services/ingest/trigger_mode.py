"""Real-time or micro-batch: how the routing query runs, decided once at start, said in one line.

Spark 4.1's real-time mode runs a stateless Kafka -> Kafka query as long-running tasks, one per
input partition, that route each record the moment it arrives (milliseconds instead of a
micro-batch's seconds); its trigger's interval is only how often progress is checkpointed. It needs
a task slot for every raw partition *at once*, plus slots for the queries beside it (the window
counts, which are stateful and stay micro-batch, and the span export). So:

* with the default master (``auto``) the job sizes ``local[N]`` itself: N = raw partitions +
  the side queries' slots (:func:`side_slots`);
* on a given master (``local[k]``, a cluster) it counts the slots it has; too few, or no raw topic
  to size from, and the routing query runs micro-batch, with one line saying why;
* ``MESH_INGEST_MODE=micro-batch`` asks for micro-batch outright.

Raw partitions that appear later (a new ``raw.<type>`` topic) are picked up by the running query at
its next checkpoint when the slots allow; when they would not, the job exits with one line and its
supervisor starts it again, sized for the new count (see :func:`outgrown`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from shared.errors import ConfigError
from shared.service_files import MICRO_BATCH, REAL_TIME
from shared.service_settings import INGEST_SHUFFLE_PARTITIONS

MODES = (REAL_TIME, MICRO_BATCH)

#: Tasks each side query (window counts, span export) reads the raw topics with, whatever their
#: partition count (``coalesce``): the side queries' batches must fit in the slots kept for them.
SIDE_READ_TASKS = 1
#: The window counts' shuffle (= state store) partitions by default (why one:
#: shared.service_settings, where the MESH_INGEST_* defaults are declared).
DEFAULT_SHUFFLE_PARTITIONS = INGEST_SHUFFLE_PARTITIONS


def side_slots(shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS) -> int:
    """Task slots kept for the micro-batch queries beside the real-time one: as many as they can
    run at once, the span export's reading task plus the window counts' widest stage.

    Why exactly that many: Spark's scheduler never takes a slot back. At every checkpoint
    hand-over routing frees all its slots for a second or two; a side query with more tasks than
    its own slots (16 reading tasks, one per raw partition, as it was) takes them, and routing's
    next batch waits until those tasks end (issue 29, ingest alone at 1 000 records/s: hand-overs
    of 2.5-2.8 s with 16 reading tasks beside it, 2.1-2.4 s bounded, 1.3-2.4 s with no counts at
    all). Bounded, the side queries always find their own slots free, and routing's are there
    when it comes back."""
    return SIDE_READ_TASKS + max(SIDE_READ_TASKS, shuffle_partitions)


#: The side slots of the default configuration.
SIDE_SLOTS = side_slots()
#: The master that lets the job size ``local[N]`` itself.
AUTO_MASTER = "auto"


#: Spark's smallest real-time batch (spark.sql.streaming.realTimeMode.minBatchDuration).
MIN_CHECKPOINT_S = 5.0
#: The units Spark's interval parser takes in a trigger (singular or plural). Abbreviations such
#: as ``s``, ``ms`` or ``min`` it refuses, and only when the query starts, with a JVM trace.
_UNITS = {"millisecond": 0.001, "second": 1.0, "minute": 60.0, "hour": 3600.0}


def spark_duration(value: str, setting: str, minimum_s: float = 0.0) -> float:
    """``"30 seconds"`` -> 30.0, checked as Spark will parse it when a query starts; a one-line
    error naming ``setting`` for anything else, or for less than ``minimum_s``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", value.lower())
    unit = _UNITS.get(match.group(2).removesuffix("s")) if match else None
    if match is None or unit is None:
        raise ConfigError(f"{setting}={value!r}: give a duration such as '30 seconds' or "
                          "'500 milliseconds' (Spark takes no abbreviations)")  # fmt: skip
    seconds = float(match.group(1)) * unit
    if seconds < minimum_s:
        raise ConfigError(f"{setting}={value!r}: at least {minimum_s:g} seconds")
    return seconds


def checkpoint_seconds(interval: str) -> float:
    """Real-time mode's batch length, at least Spark's 5 s minimum."""
    return spark_duration(interval, "MESH_INGEST_CHECKPOINT_INTERVAL", MIN_CHECKPOINT_S)


def batch_wait_s(checkpoint_interval: str) -> float:
    """How long routing's running batch may take to end and commit: a real-time batch lasts a
    checkpoint interval (a micro-batch less), plus the seconds a hand-over between two takes."""
    return checkpoint_seconds(checkpoint_interval) + 10.0


def await_batch_end(query: Any, wait_s: float, give_up: Callable[[], bool] = lambda: False) -> None:
    """Return once ``query``'s running batch has ended and committed (its progress names another
    batch), it stopped, ``wait_s`` passed or ``give_up()`` says so. A stop right after it comes
    as the next batch starts, with next to nothing routed and uncommitted; a stop mid-batch
    leaves the whole batch to be routed again."""
    finished = (query.lastProgress or {}).get("batchId")
    deadline = time.monotonic() + wait_s
    while query.isActive and time.monotonic() < deadline and not give_up():
        if (query.lastProgress or {}).get("batchId") != finished:
            return
        time.sleep(0.2)


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`; else a one-line error naming the setting."""
    if mode not in MODES:
        raise ConfigError(f"MESH_INGEST_MODE={mode!r}: choose {' or '.join(MODES)}")
    return mode


@dataclass(frozen=True)
class TriggerPlan:
    """How the routing query runs, and why."""

    mode: str
    raw_partitions: int
    slots: int
    reason: str
    #: Micro-batch only to get past raw records retention removed (see :func:`past_gap`): the
    #: job restarts in real-time mode once routing's first batch has committed.
    passing_gap: bool = False
    #: Slots kept for the side queries (:func:`side_slots`).
    side: int = SIDE_SLOTS

    @property
    def real_time(self) -> bool:
        return self.mode == REAL_TIME

    def line(self) -> str:
        """The one line the job prints at start (and `mesh status` shows)."""
        return (
            f"routing runs {self.mode}: {self.reason} "
            f"({self.raw_partitions} raw partitions, {self.slots} task slots)"
        )

    def as_json(self) -> dict[str, Any]:
        return {"ingest_mode": self.mode, "raw_partitions": self.raw_partitions,
                "slots": self.slots, "reason": self.reason}  # fmt: skip


#: How often a local master tries a failed task before its query fails: Spark's own default on a
#: cluster (spark.task.maxFailures). Plain ``local[N]`` tries once, so one task whose Kafka call
#: timed out (a side query asking a hung leader for a position, issue 48) failed its query, and
#: the job exited and was restarted; a second try reads with fresh metadata from the new leader.
LOCAL_TASK_TRIES = 4
_LOCAL_WITHOUT_TRIES = re.compile(r"local\[(\d+|\*)\]")


def master_for(master: str, raw_partitions: int, side: int = SIDE_SLOTS) -> str:
    """The Spark master to start: ``auto`` becomes ``local[raw partitions + side, tries]``; a
    given ``local[k]`` gets the same task tries (``local[k,F]`` keeps its own); a cluster
    master is kept as given (it retries tasks by default)."""
    if master == AUTO_MASTER:
        return f"local[{max(raw_partitions, 0) + side},{LOCAL_TASK_TRIES}]"
    local = _LOCAL_WITHOUT_TRIES.fullmatch(master.strip())
    if local:
        return f"local[{local.group(1)},{LOCAL_TASK_TRIES}]"
    return master


def plan(requested: str, raw_partitions: int, slots: int, side: int = SIDE_SLOTS) -> TriggerPlan:
    """Real-time when asked for and every raw partition gets a slot with ``side`` to spare."""
    if requested == MICRO_BATCH:
        return TriggerPlan(MICRO_BATCH, raw_partitions, slots, "MESH_INGEST_MODE=micro-batch",
                           side=side)  # fmt: skip
    if raw_partitions == 0:
        reason = "no raw topic to size real-time mode from yet; it starts once one exists"
        return TriggerPlan(MICRO_BATCH, raw_partitions, slots, reason, side=side)
    needed = raw_partitions + side
    if slots < needed:
        reason = (
            f"real-time mode needs {needed} task slots (one per raw partition + {side} for "
            f"the side queries), the master has {slots}: give it more cores or use the auto master"
        )
        return TriggerPlan(MICRO_BATCH, raw_partitions, slots, reason, side=side)
    return TriggerPlan(REAL_TIME, raw_partitions, slots, "one long-running task per raw partition",
                       side=side)  # fmt: skip


def past_gap(planned: TriggerPlan, skipped_records: int) -> TriggerPlan:
    """The plan for a routing query that resumes before raw records retention removed.

    Spark's real-time Kafka reader does not skip such a gap as the micro-batch reader does with
    ``failOnDataLoss=false``: its task dies with ``OffsetOutOfRangeException``, and a job
    restarted on the same checkpoint dies the same way for ever (chaos case 6 found it). So the
    first batch after the gap runs micro-batch (which skips it, reported by the job), and the
    job then restarts in the planned real-time mode."""
    if not planned.real_time:
        return planned
    reason = (f"first getting past {skipped_records} raw records retention removed (the "
              "real-time reader cannot skip them); real-time again after one batch")  # fmt: skip
    return replace(planned, mode=MICRO_BATCH, reason=reason, passing_gap=True)


def outgrown(started: TriggerPlan, raw_partitions: int, auto_master: bool) -> str | None:
    """Why the job must restart to stay as planned with ``raw_partitions`` now, or None.

    Real-time: more raw partitions than slots would leave partitions without a task. Micro-batch
    only because there was no raw topic: one exists now and the auto master can size for it.
    """
    if started.real_time and raw_partitions + started.side > started.slots:
        return (
            f"raw partitions grew from {started.raw_partitions} to {raw_partitions}, more than "
            f"real-time mode's {started.slots - started.side} task slots: restarting to resize"
        )
    if not started.real_time and started.raw_partitions == 0 and raw_partitions and auto_master:
        return f"{raw_partitions} raw partitions now exist: restarting in real-time mode"
    return None


def raw_partitions(partitions_by_topic: Mapping[str, int], pattern: str) -> int:
    """Partitions of every topic the raw pattern selects (a Java regex, which Kafka's
    ``subscribePattern`` matches against the whole name, as ``fullmatch`` does)."""
    compiled = re.compile(pattern)
    return sum(n for name, n in partitions_by_topic.items() if compiled.fullmatch(name))
