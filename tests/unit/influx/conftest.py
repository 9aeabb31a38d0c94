"""Fixtures of the InfluxDB unit tests: a fake InfluxDB on a real socket, a manual clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_influx import FakeClock, FakeInflux


@pytest.fixture
def fake_influx() -> Iterator[FakeInflux]:
    server = FakeInflux()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
