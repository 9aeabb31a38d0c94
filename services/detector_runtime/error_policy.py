"""What to do when too many records fail: stop, or dead-letter them and go on.

A detector that raises on every record must not crash-loop, and must not silently turn the
input stream into dead letters either. The policy looks at the last ``window`` records; when
the failed share passes the threshold it either asks the runtime to stop (after committing what it
did, exit code 3) or logs a warning (at most once a minute) and goes on.
"""

from __future__ import annotations

import collections
import logging
import time

log = logging.getLogger(__name__)


class ErrorRateExceeded(Exception):
    """The failed share of recent records passed the threshold and the policy is ``stop``."""


class ErrorPolicy:
    def __init__(self, threshold: float, window: int, action: str) -> None:
        self.threshold = threshold
        self.window = window
        self.action = action
        self._recent: collections.deque[bool] = collections.deque(maxlen=window)
        self._failed = 0
        self._last_warning = 0.0

    def record(self, failed: bool) -> None:
        recent = self._recent
        if len(recent) == recent.maxlen and recent[0]:
            self._failed -= 1
        recent.append(failed)
        self._failed += failed

    def record_ok(self, count: int) -> None:
        """``count`` records that succeeded (one call per batch: cheaper than one per record)."""
        recent = self._recent
        if count >= recent.maxlen:  # type: ignore[operator]
            recent.clear()
            self._failed = 0
            recent.extend([False] * recent.maxlen)  # type: ignore[operator]
            return
        for _ in range(max(0, len(recent) + count - recent.maxlen)):  # type: ignore[operator]
            self._failed -= recent.popleft()
        recent.extend([False] * count)

    @property
    def rate(self) -> float:
        return self._failed / len(self._recent) if self._recent else 0.0

    def check(self) -> None:
        """Raise ErrorRateExceeded (policy stop) or warn (policy continue) when over threshold."""
        if len(self._recent) < self.window or self.rate < self.threshold:
            return
        summary = (
            f"{self._failed} of the last {len(self._recent)} records failed "
            f"(threshold {self.threshold:.0%})"
        )
        if self.action == "stop":
            raise ErrorRateExceeded(
                f"{summary}: stopping; the failed records are in the dead-letter topic. Fix the "
                "detector, or run with --on-error-rate continue to dead-letter and go on"
            )
        now = time.monotonic()
        if now - self._last_warning >= 60:
            self._last_warning = now
            log.warning("%s: going on (--on-error-rate continue)", summary)
