"""Clearing what a job killed mid-write leaves in a query's checkpoint (and nothing else)."""

from __future__ import annotations

from pathlib import Path

from services.ingest.checkpoint_repair import clear_interrupted_writes


def _files(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("v1\n{}")


def test_a_temporary_file_of_an_interrupted_write_is_removed_and_complete_entries_stay(
    tmp_path: Path,
) -> None:
    _files(tmp_path / "offsets", "0", ".0.crc", "1", ".1.crc")
    _files(tmp_path / "commits", "0", ".0.crc", ".1.6f1c.tmp", "..1.6f1c.tmp.crc")
    removed = clear_interrupted_writes(tmp_path)
    assert sorted(p.name for p in removed) == ["..1.6f1c.tmp.crc", ".1.6f1c.tmp"]
    assert sorted(p.name for p in (tmp_path / "commits").iterdir()) == [".0.crc", "0"]
    assert sorted(p.name for p in (tmp_path / "offsets").iterdir()) == [
        ".0.crc",
        ".1.crc",
        "0",
        "1",
    ]


def test_a_commit_whose_batch_has_no_offsets_entry_is_removed(tmp_path: Path) -> None:
    _files(tmp_path / "offsets")  # killed as the first real-time batch ended
    _files(tmp_path / "commits", "0", ".0.crc")
    assert sorted(p.name for p in clear_interrupted_writes(tmp_path)) == [".0.crc", "0"]
    assert list((tmp_path / "commits").iterdir()) == []


def test_a_healthy_checkpoint_is_left_alone(tmp_path: Path) -> None:
    _files(tmp_path / "offsets", "4", "5")
    _files(tmp_path / "commits", "4", "5")
    assert clear_interrupted_writes(tmp_path) == []
    assert clear_interrupted_writes(tmp_path / "never-started") == []
