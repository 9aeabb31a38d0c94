"""LineProtocolFiles: one file per UTC day, rolled over by size, appended whole lines only."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from shared.influx.line_protocol import Point
from shared.influx.writer import LineProtocolFiles


class Today:
    def __init__(self, day: str) -> None:
        self.day = day

    def __call__(self) -> datetime:
        return datetime.fromisoformat(f"{self.day}T23:59:59").replace(tzinfo=UTC)


def points(*values: int) -> list[Point]:
    return [Point("m", {"k": "v"}, {"n": v}, v) for v in values]


def test_points_are_appended_to_the_day_file_and_the_folder_is_created(tmp_path: Path) -> None:
    folder = tmp_path / "metrics" / "deep"
    files = LineProtocolFiles(folder, utc_now=Today("2026-11-22"))
    files.write(points(1, 2))
    files.write(points(3))
    path = folder / "metrics-2026-11-22.lp"
    assert path.read_text() == "m,k=v n=1i 1\nm,k=v n=2i 2\nm,k=v n=3i 3\n"
    stats = files.stats()
    assert (stats.written, stats.bytes, stats.failures, stats.path) == (
        3,
        path.stat().st_size,
        0,
        str(path),
    )


def test_a_new_utc_day_starts_a_new_file(tmp_path: Path) -> None:
    today = Today("2026-11-22")
    files = LineProtocolFiles(tmp_path, utc_now=today)
    files.write(points(1))
    today.day = "2026-11-23"
    files.write(points(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "metrics-2026-11-22.lp",
        "metrics-2026-11-23.lp",
    ]


def test_a_full_file_rolls_over_to_numbered_parts(tmp_path: Path) -> None:
    line_size = len("m,k=v n=1i 1\n")
    files = LineProtocolFiles(
        tmp_path, max_bytes_per_file=2 * line_size, utc_now=Today("2026-11-22")
    )
    for value in range(1, 6):
        files.write(points(value))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "metrics-2026-11-22.1.lp",
        "metrics-2026-11-22.2.lp",
        "metrics-2026-11-22.lp",
    ]
    assert (tmp_path / "metrics-2026-11-22.2.lp").read_text() == "m,k=v n=5i 5\n"


def test_a_batch_larger_than_a_file_still_goes_whole_into_one_file(tmp_path: Path) -> None:
    files = LineProtocolFiles(tmp_path, max_bytes_per_file=10, utc_now=Today("2026-11-22"))
    files.write(points(1, 2, 3))
    assert (tmp_path / "metrics-2026-11-22.lp").read_text().count("\n") == 3


def test_a_new_writer_appends_to_the_latest_part_of_the_day(tmp_path: Path) -> None:
    (tmp_path / "metrics-2026-11-22.lp").write_text("m n=0i 0\n")
    (tmp_path / "metrics-2026-11-22.3.lp").write_text("m n=9i 9\n")
    files = LineProtocolFiles(tmp_path, utc_now=Today("2026-11-22"))
    files.write(points(1))
    assert (tmp_path / "metrics-2026-11-22.3.lp").read_text() == "m n=9i 9\nm,k=v n=1i 1\n"


def test_a_line_cut_by_a_crash_does_not_swallow_the_next_one(tmp_path: Path) -> None:
    (tmp_path / "metrics-2026-11-22.lp").write_text("m n=0i 0\nm n=")
    files = LineProtocolFiles(tmp_path, utc_now=Today("2026-11-22"))
    files.write(points(1))
    text = (tmp_path / "metrics-2026-11-22.lp").read_text()
    assert text.splitlines()[-1] == "m,k=v n=1i 1"


def test_unwritable_points_write_nothing(tmp_path: Path) -> None:
    files = LineProtocolFiles(tmp_path / "out", utc_now=Today("2026-11-22"))
    files.write([Point("m", {}, {"f": float("nan")}, 1)])
    assert not (tmp_path / "out").exists()
    assert files.stats().written == 0


def test_a_disk_error_is_counted_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    files = LineProtocolFiles(blocker / "metrics", utc_now=Today("2026-11-22"))
    files.write(points(1))
    stats = files.stats()
    assert (stats.written, stats.failures) == (0, 1)
    assert "cannot append" in stats.last_error
