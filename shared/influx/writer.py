"""Batched, bounded, retried writes of points to InfluxDB's ``/write`` endpoint.

Why it looks like this: metrics must never take the mesh down. InfluxDB may be missing, slow,
restarting or refusing a batch, and the aggregator calls :meth:`InfluxWriter.write` from its
Spark batch loop, so ``write`` never raises for an HTTP or network failure and never blocks longer
than one request per batch it sends:

- points are encoded once, on arrival, into a buffer of lines bounded by ``max_buffered``; when
  InfluxDB is away long enough to fill it the **oldest** lines are dropped (counted in
  ``dropped``): for a dashboard, the newest snapshot matters most, and totals are cumulative, so a
  later point carries what an older one said;
- a ``400`` means InfluxDB will never take those lines (a field type conflict, a line it cannot
  parse): retrying cannot help, so the batch is logged, counted in ``rejected`` and dropped
  (InfluxDB keeps the batch's other points: a 400 is a *partial* write);
- a ``5xx``, a refused connection or a timeout keeps the lines and backs off exponentially
  (``backoff_initial_s`` doubling up to ``backoff_max_s``); the next ``write`` or ``flush`` after
  the pause tries again, oldest lines first;
- a ``404`` (database not found, e.g. dropped while we ran) creates the database again.

Replays are harmless: InfluxDB keeps one value per measurement + tag set + field + timestamp, so
the same points written twice leave the same series (the integration tests check it).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice

from shared.influx.errors import InfluxError
from shared.influx.files import FileStats, LineProtocolFiles
from shared.influx.line_protocol import Point, encode_point
from shared.influx.transport import TRANSPORT_ERRORS, Response, call

__all__ = ["FileStats", "InfluxWriter", "LineProtocolFiles", "WriterStats"]

log = logging.getLogger(__name__)

_DROPPED = re.compile(r"dropped=(\d+)")


@dataclass(frozen=True)
class WriterStats:
    """Counts since the writer was made, in points (lines), plus its current health.

    ``healthy`` is False from a failed attempt (5xx, no connection) until InfluxDB answers a
    write again; ``last_success_ms`` is the Unix time in ms when InfluxDB last kept points of a
    batch, 0 if never. ``failures`` counts failed attempts, the others count points.
    """

    written: int
    buffered: int
    dropped: int
    rejected: int
    failures: int
    last_error: str
    healthy: bool
    last_success_ms: int


class InfluxWriter:
    """Writes points to database ``database`` of the InfluxDB 1.x at ``url`` (``http://h:p``).

    Thread-safe; one request at a time. ``clock`` (monotonic seconds) times the backoff and is
    replaceable in tests.
    """

    def __init__(
        self,
        url: str,
        database: str,
        *,
        batch_size: int = 5000,
        max_buffered: int = 200_000,
        timeout_s: float = 5.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if batch_size < 1 or max_buffered < 1:
            raise ValueError("batch_size and max_buffered must be at least 1")
        self.url = url
        self.database = database
        self.batch_size = batch_size
        self.max_buffered = max_buffered
        self.timeout_s = timeout_s
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self._clock = clock
        self._lock = threading.RLock()
        self._lines: deque[str] = deque()
        self._database_ready = False
        self._backoff_s = 0.0  # the pause after the latest failure; 0 when healthy
        self._retry_at = 0.0  # clock() before which no send is attempted
        self._written = self._dropped = self._rejected = self._failures = 0
        self._last_error = ""
        self._healthy = True
        self._last_success_ms = 0

    # ----------------------------------------------------------------- public
    def write(self, points: Iterable[Point]) -> None:
        """Buffer ``points`` and send what is buffered unless backing off; never raises for
        InfluxDB being unreachable or refusing."""
        with self._lock:
            for point in points:
                line = encode_point(point)
                if line:
                    self._lines.append(line)
            overflow = len(self._lines) - self.max_buffered
            if overflow > 0:
                for _ in range(overflow):
                    self._lines.popleft()
                self._dropped += overflow
                log.warning("InfluxDB buffer full: dropped the %d oldest points", overflow)
            if self._clock() >= self._retry_at:
                self._send_all()

    def flush(self, timeout_s: float) -> bool:
        """Send until the buffer is empty or ``timeout_s`` (real seconds) passed; True if empty.

        The first attempt ignores a running backoff (a flush is an explicit "try now", e.g. at
        shutdown); after a failure it waits out the backoff before the next attempt. A request
        under way when the deadline passes may overrun it by up to ``timeout_s`` of the writer.
        """
        deadline = time.monotonic() + timeout_s
        with self._lock:
            self._send_all()
            while self._lines:
                pause = max(self._retry_at - self._clock(), 0.0)
                if pause >= deadline - time.monotonic():
                    break  # the next attempt would come after the deadline
                time.sleep(pause)
                self._send_all()
            return not self._lines

    def ensure_database(self) -> None:
        """``CREATE DATABASE`` (a no-op when it exists); raises :class:`InfluxError` if InfluxDB
        does not answer or refuses."""
        name = self.database.replace("\\", "\\\\").replace('"', '\\"')
        params = {"q": f'CREATE DATABASE "{name}"'}
        try:
            response = call("POST", self.url, "/query", params, timeout_s=self.timeout_s)
        except TRANSPORT_ERRORS as error:
            raise InfluxError(f"InfluxDB at {self.url} did not answer: {error}") from error
        if not response.ok or b'"error"' in response.body:
            raise InfluxError(
                f"InfluxDB at {self.url} refused to create database {self.database!r}: "
                f"HTTP {response.status} {response.text()[:300]}"
            )
        self._database_ready = True

    def stats(self) -> WriterStats:
        with self._lock:
            return WriterStats(
                written=self._written,
                buffered=len(self._lines),
                dropped=self._dropped,
                rejected=self._rejected,
                failures=self._failures,
                last_error=self._last_error,
                healthy=self._healthy,
                last_success_ms=self._last_success_ms,
            )

    # ----------------------------------------------------------------- sending
    def _send_all(self) -> None:
        """Send batch after batch, oldest first, until empty or an attempt fails."""
        while self._lines:
            if not self._database_ready:
                try:
                    self.ensure_database()
                except InfluxError as error:
                    self._failed(str(error))
                    return
            count = min(self.batch_size, len(self._lines))
            body = "".join(line + "\n" for line in islice(self._lines, count)).encode()
            params = {"db": self.database, "precision": "ns"}
            try:
                response = call(
                    "POST", self.url, "/write", params, body=body, timeout_s=self.timeout_s
                )
            except TRANSPORT_ERRORS as error:
                self._failed(f"InfluxDB at {self.url} did not answer: {error}")
                return
            if not self._handle(response, count):
                return

    def _handle(self, response: Response, count: int) -> bool:
        """Account for one answer to a batch of ``count`` lines; True to go on sending."""
        if response.ok:
            self._consume(count)
            self._written += count
            self._succeeded(accepted=True)
            return True
        if response.status == 400:
            rejected = _rejected_count(response.text(), count)
            self._consume(count)
            self._written += count - rejected
            self._rejected += rejected
            self._last_error = f"InfluxDB rejected {rejected} points: {response.text()[:500]}"
            log.error("%s", self._last_error)
            # InfluxDB is up and answering (healthy): the data was at fault, not the server.
            self._succeeded(accepted=rejected < count)
            return True
        if response.status == 404:
            self._database_ready = False  # dropped behind our back: create it again
        self._failed(f"InfluxDB answered HTTP {response.status}: {response.text()[:300]}")
        return False

    def _consume(self, count: int) -> None:
        for _ in range(count):
            self._lines.popleft()

    def _succeeded(self, *, accepted: bool) -> None:
        """InfluxDB answered; ``accepted`` when it kept at least one point of the batch."""
        if not self._healthy:
            log.info("InfluxDB at %s answers writes again", self.url)
        self._healthy = True
        self._backoff_s = 0.0
        self._retry_at = 0.0
        if accepted:
            self._last_success_ms = int(time.time() * 1000)

    def _failed(self, message: str) -> None:
        if self._healthy:
            log.warning("%s; keeping %d points and retrying", message, len(self._lines))
        self._failures += 1
        self._last_error = message
        self._healthy = False
        self._backoff_s = min(
            self.backoff_max_s,
            self._backoff_s * 2 if self._backoff_s else self.backoff_initial_s,
        )
        self._retry_at = self._clock() + self._backoff_s


def _rejected_count(message: str, count: int) -> int:
    """How many of ``count`` lines a 400 refused.

    InfluxDB 1.x answers ``partial write: ... dropped=N`` when it kept the batch's other points;
    ``N`` counts points it refused (type conflicts), and each ``unable to parse`` names one line
    it could not read, which ``N`` does not include. Without ``partial write`` nothing was kept.
    """
    if "partial write" not in message:
        return count
    dropped = sum(int(n) for n in _DROPPED.findall(message))
    return min(count, dropped + message.count("unable to parse"))
