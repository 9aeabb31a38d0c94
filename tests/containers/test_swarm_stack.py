"""The same compose file on Docker Swarm (`mesh compose up --swarm`): the stack derived from it
(hosting/containers/stack.py) starts every service on one swarm node without start conditions,
comes up healthy, and raises the planted alerts of a generated stream."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka
from tools.loadgen.ground_truth import read_ground_truth
from tools.loadgen.score import planted_alerts, read_raised

pytestmark = [pytest.mark.containers, pytest.mark.timeout(900)]


def test_the_stack_comes_up_and_alerts_on_planted_fraud(swarm_stack: Any, tmp_path: Path) -> None:
    settings = swarm_stack.settings()
    states = swarm_stack.compose.states()
    assert {s.service for s in states} >= {"kafka", "ingest", "large-amount", "topics"}
    assert all(s.ready for s in states), [s.line() for s in states]

    stream = StreamConfig(start_time_ms=int(time.time() * 1000) - 60_000, count=3000, seed=11,
                          customers=30_000, event_rate=500.0, types=("transactions",),
                          patterns=("large_amount",), fraud_share=0.01)  # fmt: skip
    truth = tmp_path / "truth.jsonl"
    assert produce_to_kafka(stream, SendOptions(ground_truth=truth, progress=False),
                            settings).failed == 0  # fmt: skip
    expected = set(planted_alerts(read_ground_truth(truth)))
    assert len(expected) >= 3
    assert read_raised(settings, "alerts", expected, timeout_s=240) == expected
