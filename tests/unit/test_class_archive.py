"""The class archive's bookkeeping: which option a JVM gets, and when a written file is kept.

No JVM runs here: a "complete" archive is a file starting with HotSpot's dynamic-archive magic,
an interrupted one starts with zeros (the JVM writes the header last). That a real JVM writes,
keeps and maps the archive is exercised by every Spark service started in the integration tests.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared.class_archive import (
    DYNAMIC_ARCHIVE_MAGIC,
    WRITE_ATTEMPTS,
    ClassArchive,
    class_archive,
    complete,
)
from shared.settings import Settings

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None, reason="the key names the JVM: needs java"
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache=tmp_path / "cache", jvm_class_archive=True)


@pytest.fixture
def jars(tmp_path: Path) -> Path:
    folder = tmp_path / "jars"
    folder.mkdir()
    (folder / "a.jar").write_bytes(b"a" * 10)
    (folder / "b.jar").write_bytes(b"b" * 20)
    return folder


def _write(path: Path, whole: bool) -> None:
    path.write_bytes((DYNAMIC_ARCHIVE_MAGIC if whole else b"\0" * 4) + b"classes" * 100)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_first_jvm_writes_at_exit_and_the_next_reads(settings, jars):
    first = class_archive(settings, "ingest", [jars / "*"])
    assert first is not None and first.pending is not None
    assert first.java_options[0] == f"-XX:ArchiveClassesAtExit={first.pending}"
    assert f".{os.getpid()}." in first.pending.name
    _write(first.pending, whole=True)

    assert first.keep()
    assert not first.pending.exists()
    second = class_archive(settings, "ingest", [jars / "*"])
    assert second == ClassArchive(first.final, None)
    assert second.java_options == [f"-XX:SharedArchiveFile={first.final}"]


def test_an_interrupted_write_is_dropped_not_kept(settings, jars):
    archive = class_archive(settings, "ingest", [jars / "*"])
    _write(archive.pending, whole=False)

    assert not archive.keep()
    assert not archive.pending.exists() and not archive.final.exists()
    assert not complete(archive.final)


def test_a_killed_starter_s_complete_file_is_kept_by_the_next_start(settings, jars):
    archive = class_archive(settings, "ingest", [jars / "*"])
    orphan = archive.final.with_name(f"{archive.final.name}.{_dead_pid()}.a1.pending")
    _write(orphan, whole=True)
    half = archive.final.with_name(f"{archive.final.name}.{_dead_pid()}.b2.pending")
    _write(half, whole=False)

    again = class_archive(settings, "ingest", [jars / "*"])
    assert again.pending is None and complete(again.final)
    assert not orphan.exists() and not half.exists()


def test_two_jvms_started_by_one_process_write_two_files(settings, jars):
    one = class_archive(settings, "kafka-broker", [jars / "*"])
    two = class_archive(settings, "kafka-broker", [jars / "*"])
    assert one.pending != two.pending and one.final == two.final


def test_a_live_writer_s_file_is_left_alone(settings, jars):
    archive = class_archive(settings, "ingest", [jars / "*"])
    _write(archive.pending, whole=True)  # our own pid: still writing, as far as others know

    class_archive(settings, "ingest", [jars / "*"])
    assert archive.pending.exists() and not archive.final.exists()


def test_a_kind_that_never_stops_cleanly_stops_trying(settings, jars):
    tries = [class_archive(settings, "ingest", [jars / "*"]) for _ in range(WRITE_ATTEMPTS + 1)]
    assert all(t.pending is not None for t in tries[:WRITE_ATTEMPTS])
    assert tries[-1].pending is None and tries[-1].java_options == []


def test_a_changed_jar_or_another_kind_is_another_archive(settings, jars):
    before = class_archive(settings, "ingest", [jars / "*"]).final
    assert class_archive(settings, "aggregator", [jars / "*"]).final != before
    (jars / "b.jar").write_bytes(b"b" * 21)
    assert class_archive(settings, "ingest", [jars / "*"]).final != before


def test_switched_off_there_is_no_archive(tmp_path, jars):
    off = Settings(cache=tmp_path / "cache", jvm_class_archive=False)
    assert class_archive(off, "ingest", [jars / "*"]) is None
    assert not Settings().jvm_class_archive  # off unless asked for (see shared.settings)


def test_a_cache_that_takes_no_writes_means_no_archive_not_a_failed_start(tmp_path, jars):
    blocked = tmp_path / "cache"
    blocked.write_text("")  # a file where the cache folder should be: mkdir fails
    settings = Settings(cache=blocked, jvm_class_archive=True)
    assert class_archive(settings, "ingest", [jars / "*"]) is None
