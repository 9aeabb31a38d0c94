"""The ground truth names real records, and their values really show the planted pattern.

The checks recompute each pattern from the stream's values (amounts, event times, countries),
and also check the converse: ordinary traffic never shows a pattern the ground truth omits.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tools.loadgen import GeneratedRecord, SendOptions, StreamConfig, dry_run, read_ground_truth
from tools.loadgen.geography import LARGE_AMOUNT_THRESHOLDS


@pytest.fixture(scope="module")
def truth(
    typical_config: StreamConfig, tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, Any]]:
    path = tmp_path_factory.mktemp("loadgen") / "truth.jsonl"
    dry_run(typical_config, SendOptions(topic_prefix="t1", ground_truth=path, progress=False))
    return read_ground_truth(path)


@pytest.fixture(scope="module")
def valid_values(typical_stream: list[GeneratedRecord]) -> list[tuple[str, dict[str, Any]]]:
    """(record type, decoded value) of every valid record, in stream order."""
    return [(r.topic_suffix, json.loads(r.value)) for r in typical_stream if r.meta.is_valid]


def _alerts(truth: list[dict[str, Any]], detector: str) -> list[dict[str, Any]]:
    return [e for e in truth if e["entry"] == "alert" and e["detector"] == detector]


def test_first_line_describes_the_run(
    truth: list[dict[str, Any]], typical_config: StreamConfig
) -> None:
    run = truth[0]
    assert run["entry"] == "run"
    assert run["seed"] == typical_config.seed
    assert run["start_time_ms"] == typical_config.start_time_ms
    assert run["topics"] == ["t1.transactions", "t1.logins"]


def test_every_entry_names_a_record_of_the_stream(
    truth: list[dict[str, Any]], typical_stream: list[GeneratedRecord]
) -> None:
    assert {e["entry"] for e in truth} == {"run", "alert", "planted", "invalid"}
    for entry in truth[1:]:
        record = typical_stream[entry["index"]]
        assert entry["topic"] == f"t1.{record.topic_suffix}"
        if entry["record_id"] is not None:
            assert entry["record_id"].encode() in record.value
        if entry["entry"] == "invalid":
            assert record.meta.invalid_kind == entry["invalid_kind"]
        else:
            value = json.loads(record.value)
            assert value["record_id"] == entry["record_id"]
            assert value["customer_id"] == entry["customer_id"]
            assert value["event_time"] == entry["event_time"]


def test_ground_truth_lists_every_invalid_record(
    truth: list[dict[str, Any]], typical_stream: list[GeneratedRecord]
) -> None:
    listed = {e["index"] for e in truth if e["entry"] == "invalid"}
    assert listed == {r.meta.index for r in typical_stream if not r.meta.is_valid}


def test_each_detector_gets_several_planted_alerts(truth: list[dict[str, Any]]) -> None:
    for detector in ("large_amount", "velocity", "new_country"):
        assert len(_alerts(truth, detector)) >= 10, detector


def test_large_amount_alerts_are_above_threshold_and_nothing_else_is(
    truth: list[dict[str, Any]], valid_values: list[tuple[str, dict[str, Any]]]
) -> None:
    alerted = set()
    for alert in _alerts(truth, "large_amount"):
        assert alert["details"]["amount"] > alert["details"]["threshold"]
        alerted.add(alert["record_id"])
    for record_type, value in valid_values:
        if record_type == "transactions":
            large = value["amount"] > LARGE_AMOUNT_THRESHOLDS[value["currency"]]
            assert large == (value["record_id"] in alerted), value


def test_velocity_alerts_complete_a_burst_and_no_other_burst_exists(
    truth: list[dict[str, Any]],
    valid_values: list[tuple[str, dict[str, Any]]],
    typical_config: StreamConfig,
) -> None:
    window = typical_config.rules.velocity_window_ms
    needed = typical_config.rules.velocity_count
    times: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for record_type, value in valid_values:
        if record_type == "transactions":
            times[value["customer_id"]].append((value["event_time"], value["record_id"]))
    burst_members = set()
    for alert in _alerts(truth, "velocity"):
        members = alert["details"]["record_ids"]
        assert len(members) == needed and members[-1] == alert["record_id"]
        burst_members.update(members)
        own = sorted(times[alert["customer_id"]])
        end = alert["event_time"]
        in_window = [rid for t, rid in own if end - window < t <= end]
        assert sorted(in_window) == sorted(members), "the burst is exactly the planted records"
    for customer, own in times.items():
        own.sort()
        stamps = [t for t, _ in own]
        for i, (t, _) in enumerate(own):
            start = bisect.bisect_right(stamps, t - window)
            if i + 1 - start >= needed:
                crowd = {rid for _, rid in own[start : i + 1]}
                assert crowd <= burst_members, f"accidental burst for {customer}"


def test_new_country_alerts_follow_a_history_at_home_and_no_other_trip_exists(
    truth: list[dict[str, Any]],
    valid_values: list[tuple[str, dict[str, Any]]],
    typical_config: StreamConfig,
) -> None:
    alerts = {a["record_id"]: a for a in _alerts(truth, "new_country")}
    seen: dict[str, set[str]] = defaultdict(set)
    history: dict[tuple[str, str], int] = defaultdict(int)
    latest_at_home: dict[str, int] = {}
    for record_type, value in valid_values:
        customer, country = value["customer_id"], value["country"]
        alert = alerts.get(value["record_id"])
        if alert is not None:
            assert seen[customer] == {alert["details"]["home_country"]}
            assert country == alert["details"]["country"] != alert["details"]["home_country"]
            assert history[customer, record_type] >= typical_config.rules.new_country_min_history
            assert latest_at_home[customer] < value["event_time"]
        elif seen[customer]:
            assert country in seen[customer], f"unplanted trip abroad: {value}"
        seen[customer].add(country)
        history[customer, record_type] += 1
        if alert is None:
            latest_at_home[customer] = max(latest_at_home.get(customer, 0), value["event_time"])


def test_planted_records_are_on_time_and_valid(typical_stream: list[GeneratedRecord]) -> None:
    planted = [r for r in typical_stream if r.meta.is_planted]
    assert planted
    assert all(r.meta.is_valid and r.meta.lateness_ms == 0 for r in planted)


def test_ground_truth_is_written_where_asked(typical_config: StreamConfig, tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "truth.jsonl"
    report = dry_run(typical_config, SendOptions(ground_truth=path, progress=False))
    entries = read_ground_truth(path)
    assert report.ground_truth == path
    assert sum(e["entry"] == "alert" for e in entries) == report.expected_alerts
    assert sum(e["entry"] == "invalid" for e in entries) == report.invalid
