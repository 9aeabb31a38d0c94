"""Waiting for new (or restarted) topics to be served by a leader for every partition."""

from __future__ import annotations

from typing import Any

from shared.kafka.served import wait_until_served


def wait_for_leaders(admin: Any, names: list[str], timeout: float = 30.0) -> None:
    """Until every partition of ``names`` is served by its leader: a created topic answers
    NOT_LEADER for a moment, so a test that reads offsets at once would fail on it, and an
    idempotent producer could lose its first records (:mod:`shared.kafka.served`)."""
    unserved = wait_until_served(admin, names, timeout)
    if unserved:
        raise AssertionError(f"partitions not served after {timeout} s: {unserved}")
