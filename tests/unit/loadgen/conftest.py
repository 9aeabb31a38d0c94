"""Streams shared by the load generator's unit tests (generated once per session: they are pure)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tools.loadgen import GeneratedRecord, StreamConfig, generate

#: A fixed start, so that nothing depends on when the tests run (2023-11-14T22:13:20Z).
START_MS = 1_700_000_000_000


def _make_config(**overrides: object) -> StreamConfig:
    values: dict[str, object] = {
        "start_time_ms": START_MS,
        "count": 5_000,
        "customers": 5_000,
        "event_rate": 50.0,
    }
    values.update(overrides)
    return StreamConfig(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def make_config() -> Callable[..., StreamConfig]:
    """A StreamConfig with a fixed start and a small population; keyword arguments override."""
    return _make_config


@pytest.fixture(scope="session")
def typical_config() -> StreamConfig:
    """Default shares, enough records for several patterns of each kind."""
    return _make_config(count=40_000, customers=10_000, event_rate=100.0, fraud_share=0.01)


@pytest.fixture(scope="session")
def typical_stream(typical_config: StreamConfig) -> list[GeneratedRecord]:
    return list(generate(typical_config))


@pytest.fixture(scope="session")
def noisy_config() -> StreamConfig:
    """Many invalid records (small size limit, so oversized ones stay cheap)."""
    return _make_config(count=30_000, invalid_share=0.3, max_record_bytes=4_096)


@pytest.fixture(scope="session")
def noisy_stream(noisy_config: StreamConfig) -> list[GeneratedRecord]:
    return list(generate(noisy_config))
