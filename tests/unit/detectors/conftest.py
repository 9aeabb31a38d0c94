"""Generator streams for the reference detectors' tests (pure, so built once per session)."""

from __future__ import annotations

import pytest

from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import FeedRecord, valid_records

#: A fixed start, so that nothing depends on when the tests run.
START_MS = 1_700_000_000_000


@pytest.fixture(scope="session")
def planted_stream() -> list[FeedRecord]:
    """Valid records with every kind of planted fraud (dozens of patterns of each)."""
    config = StreamConfig(
        start_time_ms=START_MS, count=30_000, customers=6_000, event_rate=50.0, fraud_share=0.02
    )
    return list(valid_records(config))


@pytest.fixture(scope="session")
def clean_stream() -> list[FeedRecord]:
    """The same kind of traffic with nothing planted."""
    config = StreamConfig(
        start_time_ms=START_MS, count=30_000, customers=6_000, event_rate=50.0, fraud_share=0.0
    )
    return list(valid_records(config))
