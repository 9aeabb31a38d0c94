"""The history service's command line and its resume point: no broker, no Spark."""

from __future__ import annotations

import json

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
