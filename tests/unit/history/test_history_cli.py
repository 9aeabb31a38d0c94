"""The history service's command line and its resume point: no broker, no Spark."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from services.history.main import main
from services.history.resume import EARLIEST, starting_offsets


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--location", "/var/history"], "is not a URI: give a Hadoop path"),
        (["--trigger", "-1"], "0 or more seconds"),
        (["--trigger", "soon"], "invalid float value"),
        (["--retention", "60"], "unrecognized arguments"),
    ],
)
def test_a_mistake_is_one_line_and_exit_status_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("history: error: ") and says in err
    assert err.count("\n") == 1


def test_starting_offsets_go_one_past_what_is_stored_and_name_every_partition() -> None:
    stored = {("records.transactions", 1): 41, ("alerts", 0): 0}
    document = json.loads(starting_offsets({"records.transactions": 3, "alerts": 1}, stored))
    assert document == {
        "records.transactions": {"0": EARLIEST, "1": 42, "2": EARLIEST},
        "alerts": {"0": 1},
    }


def test_the_upkeep_clock_starts_with_the_history_and_survives_a_restart(tmp_path: Path) -> None:
    from services.history.upkeep import Upkeep

    clock = tmp_path / "cp" / "upkeep-at"
    upkeep = Upkeep("file:///h", ["transactions"], 60, 3600, clock)
    assert not upkeep.due(1_000_000.0)  # a new history: nothing to compact yet
    assert not upkeep.due(1_000_000.0 + 3599)
    restarted = Upkeep("file:///h", ["transactions"], 60, 3600, clock)
    assert restarted.due(1_000_000.0 + 3600)
    assert Upkeep("file:///h", [], 60, 3600).due(time.time())  # no clock file: due
