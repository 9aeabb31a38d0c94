"""A manifest's ``autoscale:`` block and the line `mesh status` prints from the last look."""

from __future__ import annotations

from typing import Any

import pytest

from control.autoscale.report import autoscale_line
from shared.detector.autoscale import AutoscalePolicy
from shared.detector.errors import ManifestError
from shared.detector.manifest import parse_manifest

BASE = {"name": "x", "version": "1", "inputs": ["transactions"], "owner": "me", "replicas": 2}


def test_the_block_becomes_the_policy_with_the_hpa_window_by_default() -> None:
    manifest = parse_manifest({**BASE, "autoscale": {"min": 1, "max": 6, "lag_per_replica": 5000}})
    assert manifest.autoscale == AutoscalePolicy(1, 6, 5000, 300.0)
    assert parse_manifest(BASE).autoscale is None


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"min": 3, "max": 2, "lag_per_replica": 10}, "field `autoscale`: min (3) is above max"),
        ({"min": 1, "max": 2, "lag_per_replica": 0},
         "field `autoscale`: field `lag_per_replica` must be a whole number >= 1, not 0"),
        ({"min": 1, "max": 2}, "field `autoscale`: missing field `lag_per_replica`"),
        ({"min": 1, "max": 2, "lag_per_replica": 5, "step": 1}, "unknown field `step`"),
        ("on", "field `autoscale`: expected a mapping of min, max, lag_per_replica"),
        ({"min": 3, "max": 6, "lag_per_replica": 5},
         "field `replicas` (2) must be between autoscale's min and max (3 to 6)"),
    ],
)  # fmt: skip
def test_a_bad_block_is_one_line(block: Any, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest({**BASE, "autoscale": block}, "m.yaml")
    assert message in str(info.value) and "\n" not in str(info.value)


POLICY = AutoscalePolicy(1, 6, 5000)
LOOK = {"autoscale": True, "reason": "lag 48 210 / 5 000 per replica -> 6 (max)"}


def test_status_line_says_bounds_and_the_last_reason() -> None:
    assert autoscale_line(POLICY, LOOK, 2, 5) == (
        "autoscale min 1 max 6 lag/replica 5 000 down after 300 s: "
        "lag 48 210 / 5 000 per replica -> 6 (max)"
    )
    assert autoscale_line(None, LOOK, 2, 5) == "autoscale off"


def test_status_line_says_when_there_is_no_fresh_look() -> None:
    assert "no decision yet" in autoscale_line(POLICY, None, None, 5)
    assert "last look 60 s ago" in autoscale_line(POLICY, LOOK, 60, 5)
    assert autoscale_line(POLICY, {"error": "broker down"}, 1, 5).endswith(": broker down")
