"""The instance status file: what one detector instance says about itself, for the CLI and the
supervisor.

A JSON object at a path the instance is given (``--status-file`` or ``MESH_INSTANCE_STATUS``),
replaced whole (temporary file in the same folder, then ``os.replace``) so a reader never sees
half a file. The loop refreshes it at most once a second, between batches, from counters it keeps
anyway: the file costs nothing per record. It is also written when the instance gets partitions
(a supervisor waits for that) and when it ends, ``stopped`` or ``failed`` with ``last_error``.

Fields: instance_id, detector, version, group, pid, state (starting | running | stopped |
failed), started and updated (epoch seconds), records, alerts, dead_letters, failed_records,
replayed (records a restarted ingest routed again, skipped as counted already), error_rate,
records_per_s (over about the last 10 s), assigned ("topic[p]"), assignments,
revocations, rebalances (librdkafka's count), uncommitted_batches (partitions handed over
with a processed but uncommitted batch: each is at most one batch processed twice), waiting
(input partitions held back until an output partition has a leader again, each with what it
waits for), last_error (null unless failed).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.detector_runtime.error_policy import ErrorRateExceeded
from shared.errors import MeshError
from shared.json_files import write_json_atomic

log = logging.getLogger(__name__)

STARTING, RUNNING, STOPPED, FAILED = "starting", "running", "stopped", "failed"
MAX_ERROR_CHARS = 300


@dataclass(frozen=True)
class Progress:
    """The numbers of one refresh, taken from the runner's counters between batches."""

    records: int = 0
    alerts: int = 0
    dead_letters: int = 0
    failed_records: int = 0
    replayed: int = 0
    error_rate: float = 0.0
    assigned: tuple[str, ...] = ()
    assignments: int = 0
    revocations: int = 0
    rebalances: int = 0
    uncommitted_batches: int = 0
    #: Input partitions parked until an output partition has a leader again (parking.py).
    waiting: tuple[str, ...] = ()


@dataclass
class Membership:
    """How often the instance's group moved its partitions, as its rebalance callbacks and
    statistics tell it (what it owns now is the consumer's own ``assignment()``)."""

    #: Rebalance callbacks that assigned at least one partition.
    assignments: int = 0
    #: Partitions revoked or lost, in total.
    revocations: int = 0
    #: librdkafka's cgrp.rebalance_cnt (from statistics; 0 until the first report).
    rebalances: int = 0

    def on_assign(self, partitions: Iterable[Any]) -> None:
        if partitions:
            self.assignments += 1

    def on_revoke(self, partitions: Iterable[Any]) -> None:
        self.revocations += len({(p.topic, p.partition) for p in partitions})

    def on_stats(self, stats: Mapping[str, Any]) -> None:
        """librdkafka's statistics (parsed): keeps the group's rebalance count, nothing else."""
        with contextlib.suppress(ValueError, KeyError, TypeError):
            self.rebalances = int(stats["cgrp"]["rebalance_cnt"])


def describe(exc: object) -> str:
    """``last_error`` for an exception: the runtime's own errors by their message (they are
    written for operators), anything else as ``Class: message`` (a bug); one line, bounded."""
    expected = isinstance(exc, ErrorRateExceeded | MeshError)
    text = str(exc) if expected else f"{type(exc).__name__}: {exc}"
    lines = text.strip().splitlines()
    line = lines[0] if lines else type(exc).__name__
    return line if expected else line[:MAX_ERROR_CHARS]


class StatusFile:
    """Keeps one instance's status file: ``due``/``write`` from the loop, ``finish`` at the end."""

    def __init__(
        self,
        path: Path | str,
        *,
        instance_id: str = "",
        detector: str = "",
        version: str = "",
        group: str = "",
        interval_s: float = 1.0,
        rate_window_s: float = 10.0,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.identify(instance_id=instance_id, detector=detector, version=version, group=group)
        self.interval_s = interval_s
        self.rate_window_s = rate_window_s
        self._clock, self._monotonic = clock, monotonic
        self.started = clock()
        self.state = STARTING
        self.last_error: str | None = None
        self.progress = Progress()
        self.records_per_s = 0.0
        self._samples: collections.deque[tuple[float, int]] = collections.deque()
        self._next_write = 0.0
        self._failing = False

    def identify(self, *, instance_id: str, detector: str, version: str, group: str) -> None:
        """Names known once the detector is loaded (a refused configuration keeps the guess)."""
        self.instance_id = instance_id
        self.detector = detector
        self.version = version
        self.group = group

    def expedite(self) -> None:
        """Make the next ``due()`` true (a new assignment is news worth writing at once)."""
        self._next_write = 0.0

    def due(self) -> bool:
        """Whether a second has passed since the last write (the loop asks after every consume,
        and gathers the numbers only when it is)."""
        return self._monotonic() >= self._next_write

    def write(self, progress: Progress | None = None, state: str | None = None) -> None:
        """Write now, with ``progress`` (else the last one known) and ``state`` if it changed."""
        now = self._monotonic()
        self._next_write = now + self.interval_s
        if progress is not None:
            self.progress = progress
        if state is not None:
            self.state = state
        self._rate(now)
        self._replace(self.document())

    def finish(self, progress: Progress | None, error: object) -> None:
        """The last write: ``stopped`` after a clean stop, else ``failed`` with the error."""
        if error is None:
            self.write(progress, STOPPED)
        else:
            self.fail(describe(error), progress)

    def incident(self, message: str) -> None:
        """Something the operator must hear of while the instance goes on (an input topic
        re-created): ``last_error``, written at the next loop turn."""
        self.last_error = message
        self.expedite()

    def fail(self, message: str, progress: Progress | None = None) -> None:
        self.last_error = message
        self.write(progress, FAILED)

    def document(self) -> dict[str, Any]:
        p = self.progress
        ended = self.state in (STOPPED, FAILED)
        return {
            "instance_id": self.instance_id,
            "detector": self.detector,
            "version": self.version,
            "group": self.group,
            "pid": os.getpid(),
            "state": self.state,
            "started": self.started,
            "updated": self._clock(),
            "records": p.records,
            "alerts": p.alerts,
            "dead_letters": p.dead_letters,
            "failed_records": p.failed_records,
            "replayed": p.replayed,
            "error_rate": float(p.error_rate),
            "records_per_s": 0.0 if ended else round(self.records_per_s, 1),
            "assigned": list(p.assigned),
            "assignments": p.assignments,
            "revocations": p.revocations,
            "rebalances": p.rebalances,
            "uncommitted_batches": p.uncommitted_batches,
            "waiting": list(p.waiting),
            "last_error": self.last_error,
        }

    def _rate(self, now: float) -> None:
        """records/s between the oldest sample of the window and now; a span shorter than the
        write interval keeps the previous figure (a forced write right after another would
        otherwise divide a batch by milliseconds)."""
        samples = self._samples
        samples.append((now, self.progress.records))
        while len(samples) > 1 and samples[1][0] <= now - self.rate_window_s:
            samples.popleft()
        since, records = samples[0]
        if now - since >= self.interval_s:
            self.records_per_s = max(0, self.progress.records - records) / (now - since)

    def _replace(self, document: dict[str, Any]) -> None:
        try:
            write_json_atomic(self.path, document)
        except OSError as exc:
            # Monitoring must not stop detection: say so once, keep trying every second.
            if not self._failing:
                log.warning("cannot write the status file %s: %s", self.path, exc)
            self._failing = True
            return
        if self._failing:
            log.info("status file %s written again", self.path)
        self._failing = False
