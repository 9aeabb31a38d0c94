"""What the docker backend reads from the engine's container state, and a container's health."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from control.deploy.container_replicas import _last_exit, _timestamp
from hosting.containers import healthcheck
from hosting.servers.broker import broker_properties
from shared.process_usage import started_at


def test_engine_timestamps_with_nanoseconds_and_the_zero_time() -> None:
    assert _timestamp("2026-11-24T12:00:01.123456789Z") == pytest.approx(
        1795521601.123456, abs=1e-6
    )
    assert _timestamp("2026-11-24T12:00:01Z") == 1795521601.0
    assert _timestamp("0001-01-01T00:00:00Z") is None
    assert _timestamp(None) is None


def test_last_exit_names_the_code_the_engine_error_and_an_oom_kill() -> None:
    assert _last_exit({"ExitCode": 0, "Error": ""}) is None
    assert _last_exit({"ExitCode": 3, "Error": ""}) == "exit 3"
    assert _last_exit({"ExitCode": 137, "Error": "", "OOMKilled": True}) == "exit 137 (OOM-killed)"


def test_the_broker_image_gets_placeholders_for_what_its_entrypoint_fills_in() -> None:
    text = broker_properties(
        "127.0.0.1", "@PORT@", "@CONTROLLER_PORT@", "/var/lib/kafka",
        listen_host="@LISTEN_HOST@", advertised_host="@ADVERTISED_HOST@",
    )  # fmt: skip
    lines = dict(line.split("=", 1) for line in text.splitlines())
    assert (
        lines["listeners"]
        == "PLAINTEXT://@LISTEN_HOST@:@PORT@,CONTROLLER://@LISTEN_HOST@:@CONTROLLER_PORT@"
    )
    assert lines["advertised.listeners"] == "PLAINTEXT://@ADVERTISED_HOST@:@PORT@"
    assert lines["controller.quorum.voters"] == "1@127.0.0.1:@CONTROLLER_PORT@"
    assert broker_properties("h", 1, 2, "/d") == broker_properties("h", 1, 2, "/d",
                                                                    listen_host="h")  # fmt: skip


def test_a_detector_is_healthy_while_it_reports_running_from_this_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status = tmp_path / "instance.json"
    monkeypatch.setenv("MESH_INSTANCE_STATUS", str(status))
    monkeypatch.setattr(healthcheck, "container_started", lambda: time.time() - 10)
    assert "has not reported" in str(healthcheck.check("detector", tmp_path))
    status.write_text(json.dumps({"state": "running", "updated": time.time()}))
    assert healthcheck.check("detector", tmp_path) is None
    status.write_text(json.dumps({"state": "failed", "last_error": "boom", "updated": time.time()}))
    assert healthcheck.check("detector", tmp_path) == "the detector is failed: boom"
    status.write_text(json.dumps({"state": "running", "updated": time.time() - 600}))
    assert "has not reported for" in str(healthcheck.check("detector", tmp_path))


def test_the_history_is_healthy_once_its_query_runs_and_not_after_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.history.status import HistoryStatus
    from shared.service_files import history_status_file

    monkeypatch.setattr(healthcheck, "container_started", lambda: time.time() - 10)
    assert "the history has not reported" in str(healthcheck.check("history", tmp_path))
    status = HistoryStatus(history_status_file(tmp_path), "file:///h")
    status.started()
    assert healthcheck.check("history", tmp_path) is None
    status.batch_written()
    assert json.loads(history_status_file(tmp_path).read_text())["batches"] == 1
    status.stopped("the query failed: boom")
    assert healthcheck.check("history", tmp_path) == (
        "the history is failed: the query failed: boom"
    )


def test_a_file_left_in_the_volume_by_the_last_run_is_not_health(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mode = tmp_path / "ingest" / "routing-mode.json"
    mode.parent.mkdir()
    mode.write_text("{}")
    old = time.time() - 3600
    os.utime(mode, (old, old))
    monkeypatch.setattr(healthcheck, "container_started", lambda: time.time() - 60)
    assert healthcheck.check("ingest", tmp_path) is not None
    mode.write_text("{}")
    assert healthcheck.check("ingest", tmp_path) is None


def test_the_container_start_time_is_its_pid_1s() -> None:
    assert healthcheck.container_started() == started_at(1)
