"""The reliability suite's short form (`make chaos` runs the long one): each case on the session's
broker with less load, and the same verdict: nothing acknowledged lost, duplicates within the
case's bound, no reordering within a key, committed offsets never backwards, the fault mid-run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chaos import detector_faults
from shared.settings import Settings

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "case", [detector_faults.detector_kill, detector_faults.detector_kill_cycles],
    ids=["detector_kill", "detector_kill_cycles"],
)  # fmt: skip
def test_case_short(case, kafka_bootstrap: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = replace(Settings.from_env(), bootstrap_servers=kafka_bootstrap)
    result = case(settings, tmp_path, True)
    print(result.line())
    assert result.passed, result.line()
    assert result.figures.seen == result.figures.acknowledged > 0
