"""The manifest's start position as consumer settings (the lookups are in the integration test)."""

from __future__ import annotations

from typing import Any

import pytest

from services.detector_runtime.start_position import auto_offset_reset, is_cooperative
from shared.detector import parse_manifest

MANIFEST = {
    "name": "demo",
    "version": "1.0.0",
    "inputs": ["transactions"],
    "owner": "team",
    "replicas": 1,
}


@pytest.mark.parametrize(
    ("start", "reset"),
    [(None, "latest"), ("earliest", "earliest"), ("2026-11-22T10:00:00Z", "earliest")],
)
def test_auto_offset_reset_follows_the_manifest(start: str | None, reset: str) -> None:
    document = {**MANIFEST, **({"start": start} if start else {})}
    assert auto_offset_reset(parse_manifest(document)) == reset


@pytest.mark.parametrize(
    ("settings", "cooperative"),
    [
        ({"partition.assignment.strategy": "cooperative-sticky"}, True),
        ({"partition.assignment.strategy": "range"}, False),
        ({"partition.assignment.strategy": "range,cooperative-sticky"}, False),
        ({"partition.assignment.strategy": "roundrobin"}, False),
        ({"partition.assignment.strategy": "range", "group.protocol": "consumer"}, True),
    ],
)
def test_the_protocol_is_read_from_the_assignors(
    settings: dict[str, Any], cooperative: bool
) -> None:
    assert is_cooperative(settings) is cooperative
