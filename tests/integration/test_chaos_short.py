"""The reliability suite's short form (`make chaos` runs the long one): each case on the session's
broker with less load, and the same verdict: nothing acknowledged lost, duplicates within the
case's bound, no reordering within a key, committed offsets never backwards, the fault mid-run.
A case whose guarantee another case's short form checks too (``COVERED_IN_SHORT``, with why) is
left to `make chaos`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chaos.cases import CASES, COVERED_IN_SHORT
from shared.settings import Settings

pytestmark = pytest.mark.integration


#: Cases that run longer than the suite's 300 s per test: case 16 starts a mesh on three brokers
#: of its own and kills and restarts ingest in it (~6 min; docs/testing.md).
LONGER = {"cluster_broker_kill": 600}


@pytest.mark.parametrize(
    "name",
    [pytest.param(c, marks=pytest.mark.timeout(LONGER[c])) if c in LONGER else c
     for c in CASES if c not in COVERED_IN_SHORT],
)  # fmt: skip
def test_case_short(name: str, kafka_bootstrap: str, tmp_path: Path) -> None:
    settings = replace(Settings.from_env(), bootstrap_servers=kafka_bootstrap)
    result = CASES[name](settings, tmp_path, True)
    print(result.line())
    if result.skipped:
        pytest.skip(result.skipped)
    assert result.passed, result.line()
    assert result.figures.acknowledged == result.figures.sent > 0
    assert result.figures.seen + result.figures.dead_lettered == result.figures.acknowledged
