"""A progress bar for a Spark job group, drawn from Spark's status tracker while the job runs.

The replay's own counts arrive only when a task ends (accumulators), so the bar counts tasks of
the group's stages: sorting and replaying are most of a backtest, and each of its tasks is a set
of whole Kafka partitions. On a terminal the bar is redrawn in place; in a log, a line every
``LOG_EVERY_S``.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from pyspark import SparkContext

#: Seconds between two redraws on a terminal, and between two lines in a log.
REDRAW_S = 0.5
LOG_EVERY_S = 15.0
WIDTH = 30


class ProgressBar:
    """``with ProgressBar(sc, group): ...`` draws the group's progress until the block ends."""

    def __init__(self, sc: SparkContext, group: str, out: TextIO = sys.stdout) -> None:
        self._sc, self._group, self._out = sc, group, out
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._draw, name="backtest-progress", daemon=True)
        self._started = time.monotonic()
        self._tty = out.isatty()

    def __enter__(self) -> ProgressBar:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        if self._tty:
            self._out.write("\r" + " " * (WIDTH + 60) + "\r")
            self._out.flush()

    def _draw(self) -> None:
        last_line = 0.0
        while not self._stop.wait(REDRAW_S):
            done, total = self._tasks()
            if total == 0:
                continue
            elapsed = time.monotonic() - self._started
            filled = int(WIDTH * done / total)
            text = (f"[{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total} tasks, "
                    f"{elapsed:.0f} s")  # fmt: skip
            if self._tty:
                self._out.write("\r" + text)
                self._out.flush()
            elif elapsed - last_line >= LOG_EVERY_S:
                last_line = elapsed
                print(text, file=self._out, flush=True)

    def _tasks(self) -> tuple[int, int]:
        """(tasks done, tasks known) over every stage of the group's jobs so far."""
        tracker = self._sc.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self._group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        return done, total
