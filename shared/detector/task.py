"""One task: a detector applied to the records of one input partition, with its state.

This is the part of the loop that the harness and the runtime share, so that what a unit test
sees is what production does: the record is bound to ``ctx``, ``detect`` runs, its alerts are
collected; a :class:`RetriableError` is retried a bounded number of times, and a record that
finally fails has its state writes undone and comes back as an error for the caller to
dead-letter. Kafka is not mentioned here: the caller passes topic and offset as plain values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from shared.detector.context import Context, wall_clock_ms
from shared.detector.declaration import Detector
from shared.detector.errors import RetriableError
from shared.detector.state import TaskState


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries for :class:`RetriableError`: ``retries`` more attempts, backing off."""

    retries: int = 3
    backoff_s: float = 0.05
    max_backoff_s: float = 1.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_backoff_s, self.backoff_s * 2**attempt))


class Outcome(NamedTuple):
    """What one record produced: alerts, or the error that stopped it, and the attempts made."""

    alerts: Sequence[dict[str, Any]]
    error: BaseException | None
    attempts: int


#: The outcome of most records, made once: nothing found at the first attempt (a record's own
#: outcome would be an allocation per record on the runtime's hottest path).
NOTHING_FOUND = Outcome((), None, 1)


class Task:
    """The detector, its state and its ``ctx`` for one input partition number."""

    def __init__(
        self,
        detector: Detector,
        partition: int = 0,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.detector = detector
        self.partition = partition
        self.state = TaskState(detector.state, partition)
        self.ctx = Context(detector, self.state, clock)
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._detect = detector.detect
        self._stateless = not detector.stateful

    def process(self, record_type: str, record: dict[str, Any], topic: str, offset: int) -> Outcome:
        """Run ``detect`` on one decoded record."""
        ctx, state = self.ctx, self.state
        ctx.record, ctx.record_type, ctx.topic, ctx.offset = record, record_type, topic, offset
        attempt = 0
        if self._stateless:
            try:  # no state to track or undo: the common stateless case, kept short
                result = self._detect(record, ctx)
                if result is None or (result.__class__ is list and not result):
                    return NOTHING_FOUND  # a detector's usual answer
                return Outcome([result] if isinstance(result, dict) else list(result), None, 1)
            except RetriableError as exc:
                if self._retry.retries < 1:
                    return Outcome([], exc, 1)
                self._sleep(self._retry.delay(0))
                attempt = 1  # the loop below makes the retries
            except Exception as exc:
                return Outcome([], exc, 1)
        event_time = record.get("event_time")
        while True:
            state.begin(topic, offset, event_time)
            try:
                result = self._detect(record, ctx)
                if result is None:
                    alerts = []
                elif isinstance(result, dict):
                    alerts = [result]
                else:
                    alerts = list(result)
            except RetriableError as exc:
                state.rollback_record()
                if attempt >= self._retry.retries:
                    return Outcome([], exc, attempt + 1)
                self._sleep(self._retry.delay(attempt))
                attempt += 1
                continue
            except Exception as exc:  # a poison pill: the caller dead-letters the record
                state.rollback_record()
                return Outcome([], exc, attempt + 1)
            state.commit_record()
            if not alerts and attempt == 0:
                return NOTHING_FOUND
            return Outcome(alerts, None, attempt + 1)
