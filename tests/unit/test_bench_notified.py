"""Raw record -> notification for one e2e run, from the notifier's audit file and the demo
receiver's lines: each alert's first notification once, only the run's raw records, none
without a raw timestamp. No mesh: the lines are as the two files hold them."""

from __future__ import annotations

import json
from pathlib import Path

from bench.notified import notification_ms, wait_notified


def _audit(record: str, source_ms: int | None, delivered_ms: int) -> dict[str, object]:
    alert = {"detector": "large_amount", "source_record_id": record, "event_time": 1_000}
    return {"alert_id": f"a-{record}", "delivered_ms": delivered_ms, "source_ms": source_ms,
            "alert": alert}  # fmt: skip


def _received(record: str, source_ms: int, at_ms: int) -> dict[str, object]:
    return {"detector": "large_amount", "source_record_id": record, "event_time": 1_000,
            "at_ms": at_ms, "source_ms": source_ms}  # fmt: skip


def test_each_alert_counts_once_with_its_first_notification() -> None:
    lines = [
        _audit("r1", 10_000, 10_300),
        _received("r1", 10_000, 10_120),
        _audit("r2", 11_000, 11_050),
    ]

    assert sorted(notification_ms(lines, since_ms=0)) == [50.0, 120.0]


def test_raw_records_before_the_run_and_unknown_sources_are_left_out() -> None:
    lines = [
        _audit("old", 5_000, 5_100),
        _audit("unknown", None, 12_000),
        _audit("r3", 12_000, 12_040),
    ]

    assert notification_ms(lines, since_ms=10_000) == [40.0]


def test_waiting_returns_once_the_expected_alerts_are_notified(tmp_path: Path) -> None:
    audit = tmp_path / "notifier" / "notifications.jsonl"
    audit.parent.mkdir()
    audit.write_text(
        "".join(json.dumps(_audit(f"r{i}", 20_000, 20_000 + i)) + "\n" for i in range(3))
    )

    assert sorted(
        wait_notified(tmp_path, since_ms=20_000, expected=3, quiet_s=10, timeout_s=30)
    ) == [
        0.0,
        1.0,
        2.0,
    ]
