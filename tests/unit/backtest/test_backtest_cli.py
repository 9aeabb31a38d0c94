"""The backtest's command line: every mistake is one line, exit 2, and nothing written (no Spark:
each is refused before a session starts)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from services.backtest.main import main
from services.backtest.summary import Summary, summary_lines
from shared.errors import ConfigError
from shared.spark_master import check_master_answers


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["detectors/velocity", "--from", "2026-02-30"], "is not a date like"),
        (["detectors/velocity", "--from", "2026-09-02", "--to", "2026-09-01"], "is after --to"),
        (["detectors/nowhere"], "is neither a detector folder"),
        (["detectors/velocity", "--master", "spark://127.0.0.1:{port}"], "no Spark master answers"),
        (["detectors/velocity", "--master", "spark://:7077"], "is not host:port"),
    ],
)
def test_a_mistake_is_one_line_exit_2_and_nothing_written(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    argv = [a.replace("{port}", str(_closed_port())) for a in argv]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("backtest: error: ") and says in err, err
    assert err.count("\n") == 1
    assert not out.exists() and not (tmp_path / "home" / "backtests").exists()


def test_an_out_folder_already_used_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "summary.json").write_text("{}")
    assert main(["detectors/velocity", "--out", str(tmp_path / "out")]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert (tmp_path / "out" / "summary.json").read_text() == "{}"


def test_a_master_that_answers_passes_and_local_masters_are_not_asked() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        check_master_answers(f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{port}")
    check_master_answers("local[2]")
    with pytest.raises(ConfigError, match="no Spark master answers"):
        check_master_answers(f"spark://127.0.0.1:{_closed_port()}")


def test_the_summary_lists_a_long_run_by_its_busiest_and_quietest_days() -> None:
    summary = Summary(
        detector="velocity", version="1.0.0", inputs=["transactions"], date_from="2026-09-01",
        date_to="2026-10-30", table_versions={"transactions": 12}, records=2_000_000,
        failures=0, first_failure="", seconds=40.0, alerts=90,
        by_rule={"transactions_per_window": 90}, by_severity={"HIGH": 10, "MEDIUM": 80},
        by_day={f"2026-09-{d:02d}": d for d in range(1, 21)} | {"2026-10-01": 0},
    )  # fmt: skip
    text = "\n".join(summary_lines(summary))
    assert "2,000,000 in 40.0 s (50,000 records/s)" in text
    assert "transactions@v12" in text
    assert "21 days with alerts; busiest 2026-09-20 (20), quietest 2026-10-01 (0)" in text
    assert summary.as_json()["records_per_s"] == 50_000.0


def test_the_comparison_prints_each_side_and_says_when_the_deployed_detector_stored_nothing() -> (
    None
):
    from services.backtest.compare import compare_lines

    example = {"customer_id": "cus_1", "source_record_id": "txn_9", "event_time": "2026-11-25",
               "severity": "HIGH", "reason": "6 transactions within 60 s"}  # fmt: skip
    result = {"per_rule": {"rule_a": {"both": 12, "only_new": 1, "only_old": 0}},
              "examples": {"rule_a": {"only_new": [example]}}}  # fmt: skip
    text = "\n".join(compare_lines("velocity", result))
    assert "rule_a" in text and "12" in text
    assert "only new rule_a: cus_1 txn_9 at 2026-11-25 (HIGH) 6 transactions within 60 s" in text
    assert "has no stored alert" not in text
    nothing_stored = {"per_rule": {"rule_a": {"both": 0, "only_new": 3, "only_old": 0}},
                      "examples": {}}  # fmt: skip
    assert "velocity has no stored alert" in "\n".join(compare_lines("velocity", nothing_stored))
