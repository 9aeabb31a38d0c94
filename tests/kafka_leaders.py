"""Waiting for new (or restarted) topics to have a leader for every partition."""

from __future__ import annotations

import time


def wait_for_leaders(admin, names: list[str], timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Until every partition of ``names`` has a leader: a created topic answers NOT_LEADER for
    a moment, and a test that reads offsets at once would fail on it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=10).topics
        if all(
            name in topics and all(p.leader >= 0 for p in topics[name].partitions.values())
            for name in names
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"topics {names} have partitions without a leader after {timeout} s")
