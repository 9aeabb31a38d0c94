"""Line-protocol files: the same points as InfluxDB gets, appended to ``metrics-<date>.lp``.

Why: a copy that needs no server. ``influx -import`` or a plain ``curl --data-binary @file``
loads a file into any InfluxDB later, and ``grep`` reads it now. Files are per UTC day (the day
of the write, not of the points), and a day's file rolls over to ``metrics-<date>.1.lp``,
``.2.lp`` ... once it holds ``max_bytes_per_file``, so no single file grows without bound.

Like the HTTP writer, a disk error is logged and counted, never raised: metrics must not stop the
service that reports them.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from shared.influx.line_protocol import Point, encode_point

__all__ = ["FileStats", "LineProtocolFiles"]

log = logging.getLogger(__name__)

MIB = 1024 * 1024


@dataclass(frozen=True)
class FileStats:
    """Points and bytes appended since the writer was made; ``path`` is the current file."""

    written: int
    bytes: int
    failures: int
    last_error: str
    path: str


class LineProtocolFiles:
    """Appends points to ``<directory>/metrics-<UTC date>[.<n>].lp`` (the folder is created).

    ``utc_now`` gives the date of each write and is replaceable in tests.
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes_per_file: int = 64 * MIB,
        utc_now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.directory = Path(directory)
        self.max_bytes_per_file = max_bytes_per_file
        self._utc_now = utc_now
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._written = self._bytes = self._failures = 0
        self._last_error = ""

    def write(self, points: Iterable[Point]) -> None:
        """Append the points' lines, in one write per call; never raises for a disk error."""
        lines = [line for line in map(encode_point, points) if line]
        if not lines:
            return
        data = "".join(line + "\n" for line in lines).encode()
        with self._lock:
            try:
                path = self._file_for(len(data))
                with path.open("ab") as file:
                    if file.tell() and not _ends_with_newline(path):
                        file.write(b"\n")  # a crash cut the last line: keep ours whole
                    file.write(data)
            except OSError as error:
                self._failures += 1
                self._last_error = f"cannot append to {self.directory}: {error}"
                log.warning("%s", self._last_error)
                return
            self._written += len(lines)
            self._bytes += len(data)

    def stats(self) -> FileStats:
        with self._lock:
            return FileStats(
                written=self._written,
                bytes=self._bytes,
                failures=self._failures,
                last_error=self._last_error,
                path=str(self._path or ""),
            )

    def _file_for(self, size: int) -> Path:
        """Today's file with room for ``size`` more bytes (or an empty one, whatever ``size``)."""
        day = self._utc_now().strftime("%Y-%m-%d")
        path = self._path
        if path is None or not path.name.startswith(f"metrics-{day}."):
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self._latest_part(day)
        while (used := _size(path)) and used + size > self.max_bytes_per_file:
            path = self.directory / f"metrics-{day}.{_part(path) + 1}.lp"
        self._path = path
        return path

    def _latest_part(self, day: str) -> Path:
        """The day's highest-numbered file (a restarted writer appends where it left off)."""
        parts = [_part(p) for p in self.directory.glob(f"metrics-{day}*.lp")]
        latest = max((n for n in parts if n >= 0), default=0)
        name = f"metrics-{day}.lp" if latest == 0 else f"metrics-{day}.{latest}.lp"
        return self.directory / name


_PART = re.compile(r"^metrics-\d{4}-\d{2}-\d{2}(?:\.(\d+))?\.lp$")


def _part(path: Path) -> int:
    """0 for ``metrics-<date>.lp``, n for ``metrics-<date>.<n>.lp``, -1 for other names."""
    match = _PART.match(path.name)
    if match is None:
        return -1
    return int(match.group(1) or 0)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as file:
        file.seek(-1, 2)
        return file.read(1) == b"\n"
