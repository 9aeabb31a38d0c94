"""The instance status file: its fields, atomic replacement, throttling, and how main fills it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from services.detector_runtime.error_policy import ErrorRateExceeded
from services.detector_runtime.status import (
    Membership,
    Progress,
    StatusFile,
    describe,
)

FIELDS = {
    "instance_id": str,
    "detector": str,
    "version": str,
    "group": str,
    "pid": int,
    "state": str,
    "started": float,
    "updated": float,
    "records": int,
    "alerts": int,
    "dead_letters": int,
    "failed_records": int,
    "replayed": int,
    "error_rate": float,
    "records_per_s": float,
    "assigned": list,
    "assignments": int,
    "revocations": int,
    "rebalances": int,
    "uncommitted_batches": int,
    "waiting": list,
    "last_error": type(None),
}


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _status(path: Path, clock: Clock | None = None) -> StatusFile:
    return StatusFile(
        path,
        instance_id="demo-host-1-abc",
        detector="demo",
        version="1.0.0",
        group="detector.demo",
        monotonic=clock or Clock(),
    )


def _read(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_the_file_has_exactly_the_contract_fields(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    status = _status(path)
    status.write(
        Progress(
            records=10,
            alerts=2,
            dead_letters=3,
            failed_records=1,
            error_rate=0.25,
            assigned=("records.transactions[0]", "records.transactions[1]"),
            assignments=1,
            revocations=0,
            rebalances=1,
        ),
        "running",
    )
    document = _read(path)
    assert {k: type(v) for k, v in document.items()} == FIELDS
    assert list(document) == list(FIELDS), "in the contract's order, for people reading it"
    assert document["state"] == "running"
    assert document["pid"] == os.getpid()
    assert document["assigned"] == ["records.transactions[0]", "records.transactions[1]"]
    assert (document["records"], document["alerts"], document["dead_letters"]) == (10, 2, 3)
    assert document["error_rate"] == 0.25
    assert document["started"] <= document["updated"]
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"], "no temporary file left"


def test_it_is_replaced_from_a_temporary_file_in_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moves: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def spy(src: Any, dst: Any) -> None:
        moves.append((Path(src), Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    path = tmp_path / "instance" / "status.json"
    _status(path).write()
    [(src, dst)] = moves
    assert dst == path and src.parent == path.parent and src != path


def test_a_reader_never_sees_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    status = _status(path)
    status.write()
    done = threading.Event()
    bad: list[str] = []

    def read() -> None:
        while not done.is_set():
            text = path.read_text()
            try:
                json.loads(text)
            except ValueError:
                bad.append(text)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(2000):
            status.write(Progress(records=i, assigned=tuple(f"t[{p}]" for p in range(i % 50))))
    finally:
        done.set()
        reader.join()
    assert bad == []
    assert _read(path)["records"] == 1999


def test_the_loop_is_told_to_write_at_most_once_a_second(tmp_path: Path) -> None:
    clock = Clock()
    status = _status(tmp_path / "status.json", clock)
    assert status.due()
    status.write(Progress(records=1))
    for step in (0.0, 0.3, 0.99):
        clock.now = 100.0 + step
        assert not status.due()
    clock.now = 101.0
    assert status.due()
    status.write(Progress(records=2))
    assert not status.due()
    assert _read(tmp_path / "status.json")["records"] == 2


def test_records_per_s_is_over_the_last_ten_seconds_and_zero_when_idle(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "status.json"
    status = _status(path, clock)
    status.write(Progress(records=0), "running")
    clock.now += 0.01  # a forced write right after (an assignment): no division by 10 ms
    status.write(Progress(records=500))
    assert _read(path)["records_per_s"] == 0.0
    for second in range(1, 21):  # 100 records/s for 20 s
        clock.now = 100.0 + second
        status.write(Progress(records=500 + 100 * second))
    assert _read(path)["records_per_s"] == 100.0
    for second in range(1, 12):  # idle: the window empties
        clock.now = 120.0 + second
        status.write(Progress(records=2500))
    assert _read(path)["records_per_s"] == 0.0


def test_a_clean_stop_and_a_failure_are_final_states(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "status.json"
    status = _status(path, clock)
    status.write(Progress(records=0), "running")
    clock.now += 5
    status.finish(Progress(records=500), None)
    document = _read(path)
    assert (document["state"], document["records"], document["last_error"]) == (
        "stopped",
        500,
        None,
    )
    assert document["records_per_s"] == 0.0

    status.finish(None, ErrorRateExceeded("100 of the last 100 records failed: stopping"))
    document = _read(path)
    assert document["state"] == "failed" and document["records"] == 500
    assert document["last_error"] == "100 of the last 100 records failed: stopping"


def test_last_error_is_one_bounded_line_naming_an_unexpected_exception_class() -> None:
    assert describe(KeyError("x")) == "KeyError: 'x'"
    long = describe(RuntimeError("first line " + "x" * 500 + "\nsecond line"))
    assert long.startswith("RuntimeError: first line ") and len(long) == 300
    assert describe(ErrorRateExceeded("too many")) == "too many"


def test_a_status_file_that_cannot_be_written_does_not_stop_the_instance(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    status = _status(blocker / "status.json")
    status.write()
    status.write()
    warnings = [r for r in caplog.records if "cannot write the status file" in r.message]
    assert len(warnings) == 1, "warned once, not every second"


class _TP:
    def __init__(self, topic: str, partition: int) -> None:
        self.topic, self.partition = topic, partition


def test_membership_counts_assignments_revocations_and_librdkafka_rebalances() -> None:
    membership = Membership()
    membership.on_assign([_TP("t", 1), _TP("t", 0)])
    membership.on_assign([])
    membership.on_assign([_TP("u", 0)])
    membership.on_revoke([_TP("t", 1)])
    assert (membership.assignments, membership.revocations) == (2, 1)
    membership.on_stats({"name": "c", "cgrp": {"rebalance_cnt": 3, "state": "up"}})
    membership.on_stats({})  # a report without a group section keeps the last count
    assert membership.rebalances == 3


def test_a_refused_configuration_is_reported_as_failed(tmp_path: Path) -> None:
    from services.detector_runtime.main import main

    path = tmp_path / "status.json"
    code = main([str(tmp_path / "no-such-detector"), "--status-file", str(path)])
    document = _read(path)
    assert code == 2
    assert document["state"] == "failed"
    assert document["detector"] == "no-such-detector"
    assert "neither a detector folder" in document["last_error"]
    assert "\n" not in document["last_error"]


def test_the_status_path_defaults_to_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.detector_runtime.main import arguments
    from shared.settings import Settings

    monkeypatch.delenv("MESH_INSTANCE_STATUS", raising=False)
    assert arguments(["d"], Settings.from_env()).status_file is None
    monkeypatch.setenv("MESH_INSTANCE_STATUS", str(tmp_path / "s.json"))
    assert arguments(["d"], Settings.from_env()).status_file == tmp_path / "s.json"
    given = arguments(["d", "--status-file", "x.json"], Settings.from_env())
    assert given.status_file == Path("x.json")
