"""Fixtures of the metrics unit tests: a fake clock and a registry driven by it."""

from __future__ import annotations

import pytest
from metrics_fakes import FakeClock

from shared.metrics import MetricRegistry


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def registry(clock: FakeClock) -> MetricRegistry:
    """Service ``detector.velocity``, common tag ``detector=velocity``, on the fake clock."""
    return MetricRegistry(
        service="detector.velocity",
        instance_id="detector-velocity-r1-0@host:42:1700000000000",
        tags={"detector": "velocity"},
        clock=clock,
    )
