"""An operator acknowledges reported data loss (`mesh ingest ack-loss`): `mesh status` stops
showing it, the record of it stays, and the job does not report the same range again."""

from __future__ import annotations

from pathlib import Path

import pytest

from control.cli.main import main
from services.ingest.data_loss import SkippedRange
from services.ingest.job import report_data_loss
from shared.json_files import read_json
from shared.metrics import MetricRegistry
from shared.service_files import data_loss_text, ingest_status_file
from shared.settings import Settings

GAP = SkippedRange("routing", "raw.transactions", 3, 100, 1300)


def _report(home: Path, gap: SkippedRange) -> MetricRegistry:
    registry = MetricRegistry(service="ingest", instance_id="ingest@h:1:2")
    report_data_loss(Settings.from_env({"MESH_HOME": str(home)}), [gap], registry)
    return registry


def test_an_acknowledged_loss_leaves_the_status_line_and_is_not_reported_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(tmp_path, GAP)
    status_file = ingest_status_file(tmp_path)
    assert data_loss_text(read_json(status_file)).startswith("DATA LOSS: 1200 raw records")

    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    assert main(["ingest", "ack-loss"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("acknowledged 1200 raw records skipped (1 ranges") and said[-1] == "\n"
    status = read_json(status_file)
    assert data_loss_text(status) == ""
    [kept] = status["data_loss_acknowledged"]
    assert (kept["first"], kept["end"]) == (100, 1300) and kept["acknowledged_at"] >= kept["at"]

    capsys.readouterr()
    _report(tmp_path, SkippedRange("routing", "raw.transactions", 3, 700, 1300))  # a restart
    assert "DATA LOSS" not in capsys.readouterr().err  # the same records, not a new loss
    _report(tmp_path, SkippedRange("routing", "raw.transactions", 3, 5000, 5100))
    assert data_loss_text(read_json(status_file)).startswith("DATA LOSS: 100 raw records")


def test_nothing_to_acknowledge_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    assert main(["ingest", "ack-loss"]) == 0
    assert capsys.readouterr().out == "ingest: no data loss to acknowledge\n"
