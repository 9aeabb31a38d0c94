"""The scorer's pure parts: what the ground truth expects, the report lines, an alert's path."""

from __future__ import annotations

from typing import Any

from tools.loadgen.score import _path_to_publish, planted_alerts, report


def _span(span_id: str, parent: str | None, service: str, kind: str) -> dict[str, Any]:
    return {"span_id": span_id, "parent_span_id": parent, "service": service, "kind": kind,
            "name": f"{service} {kind}"}  # fmt: skip


def test_expected_alerts_are_keyed_by_detector_record_and_event_time() -> None:
    truth = [
        {"entry": "run"},
        {"entry": "alert", "detector": "velocity", "record_id": "t1", "event_time": 5,
         "trace_id": "ab" * 16},
        {"entry": "planted", "record_id": "t0", "event_time": 4},
        {"entry": "alert", "detector": "large_amount", "record_id": "t2", "event_time": 6},
    ]  # fmt: skip
    assert planted_alerts(truth) == {
        ("velocity", "t1", 5): "ab" * 16,
        ("large_amount", "t2", 6): None,
    }


def test_report_counts_raised_per_detector_and_names_the_first_missing() -> None:
    expected = {("velocity", f"t{i}", i): None for i in range(5)}
    expected[("large_amount", "x", 1)] = None
    raised = {("velocity", "t1", 1), ("large_amount", "x", 1)}
    assert report(expected, raised) == [
        "large_amount      1 of 1 planted alerts raised",
        "velocity          1 of 5 planted alerts raised; missing t0, t2, t3 ...",
    ]


def test_an_alert_of_an_earlier_run_with_the_same_ids_does_not_count() -> None:
    expected = {("velocity", "t1", 2_000): None}
    assert report(expected, {("velocity", "t1", 1_000)}) == [
        "velocity          0 of 1 planted alerts raised; missing t1"
    ]


def test_the_path_runs_from_the_root_to_the_detectors_publish_span_only() -> None:
    spans = [
        _span("i", "customer", "ingest", "consumer"),
        _span("p1", "i", "detector.velocity", "consumer"),
        _span("p2", "i", "detector.large_amount", "consumer"),
        _span("a", "p1", "detector.velocity", "producer"),
    ]
    path = _path_to_publish(spans, "detector.velocity")
    assert [s["span_id"] for s in path] == ["i", "p1", "a"]
    assert _path_to_publish(spans, "detector.new_country") == []
