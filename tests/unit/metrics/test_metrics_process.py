"""Process gauges: CPU seconds and RSS of this process, via shared.process_usage."""

from __future__ import annotations

import pytest

from shared.metrics import MetricRegistry, add_process_gauges
from shared.metrics import process as process_module


def test_process_gauges_report_this_process(registry: MetricRegistry) -> None:
    add_process_gauges(registry)
    values = {r["name"]: r["value"] for r in registry.snapshots()}
    assert set(values) == {"process.cpu_seconds", "process.rss_bytes"}
    assert values["process.cpu_seconds"] > 0
    assert values["process.rss_bytes"] > 10_000_000  # a Python process with fastavro loaded


def test_unreadable_proc_means_no_value(
    registry: MetricRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_module, "process_usage", lambda pid: None)
    add_process_gauges(registry)
    assert registry.snapshots() == []
