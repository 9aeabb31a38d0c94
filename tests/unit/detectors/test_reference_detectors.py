"""The three reference detectors against the generator's ground truth."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from shared.detector import load_detector, run
from tools.loadgen.avro_feed import FeedRecord
from tools.loadgen.fraud import RULES
from tools.loadgen.geography import LARGE_AMOUNT_THRESHOLDS

DETECTORS_DIR = Path(__file__).resolve().parents[3] / "detectors"
NAMES = ("large_amount", "velocity", "new_country")


def _expected(stream: list[FeedRecord], name: str) -> dict[str, str]:
    """record id -> rule, for every record the ground truth says must alert for ``name``."""
    return {
        r.record["record_id"]: a.rule for r in stream for a in r.meta.alerts if a.detector == name
    }


@pytest.mark.parametrize("name", NAMES)
def test_every_planted_pattern_alerts_and_nothing_else(
    name: str, planted_stream: list[FeedRecord]
) -> None:
    detector, _ = load_detector(DETECTORS_DIR / name)
    expected = _expected(planted_stream, name)
    assert len(expected) >= 10, "the stream should plant several patterns of each kind"

    result = run(detector, ((r.record_type, r.record) for r in planted_stream), partitions=4)

    assert not result.failures
    alerted = {a["source_record_id"]: a["rule"] for a in result.alerts}
    assert alerted == expected
    assert all(a["rule"] == RULES[name] for a in result.alerts)
    assert len(result.alerts) == len(alerted), "one alert per alerting record"


@pytest.mark.parametrize("name", NAMES)
def test_no_alert_on_clean_stream(name: str, clean_stream: list[FeedRecord]) -> None:
    detector, _ = load_detector(DETECTORS_DIR / name)
    result = run(detector, ((r.record_type, r.record) for r in clean_stream), partitions=4)
    assert not result.failures
    assert result.alerts == []


@pytest.mark.parametrize("name", NAMES)
def test_folder_and_module_name_load_the_same_detector(name: str) -> None:
    by_module, manifest = load_detector(f"detectors.{name}")
    by_folder, _ = load_detector(DETECTORS_DIR / name)
    assert (by_module.name, by_module.version, by_module.inputs) == (
        by_folder.name,
        by_folder.version,
        by_folder.inputs,
    )
    assert manifest.name == name and manifest.owner


def test_large_amount_thresholds_are_the_risk_table() -> None:
    module = importlib.import_module("detectors.large_amount.detector")
    thresholds = module.THRESHOLDS
    assert thresholds == dict(LARGE_AMOUNT_THRESHOLDS)


def test_large_amount_is_strictly_above_threshold() -> None:
    detector, _ = load_detector("detectors.large_amount")
    at = {"record_id": "t1", "customer_id": "c1", "event_time": 1, "currency": "EUR"}
    result = run(
        detector,
        [
            ("transactions", {**at, "amount": 9200.0}),
            ("transactions", {**at, "record_id": "t2", "amount": 9200.01}),
        ],
    )
    assert [a["source_record_id"] for a in result.alerts] == ["t2"]
    assert result.alerts[0]["evidence"]["threshold"] == "9200.0"


def test_velocity_does_not_alert_on_five_spread_over_more_than_a_minute() -> None:
    detector, _ = load_detector("detectors.velocity")
    records = [
        ("transactions", {"record_id": f"t{i}", "customer_id": "c", "event_time": i * 16_000})
        for i in range(5)
    ]
    assert run(detector, records).alerts == []
    burst = [
        ("transactions", {"record_id": f"b{i}", "customer_id": "c", "event_time": i * 5_000})
        for i in range(6)
    ]
    result = run(detector, burst)
    assert [a["source_record_id"] for a in result.alerts] == ["b4", "b5"]


def test_new_country_forgets_a_country_after_thirty_days() -> None:
    detector, _ = load_detector("detectors.new_country")
    day = 24 * 3600 * 1000

    def txn(i: int, country: str, at: int) -> tuple[str, dict[str, object]]:
        return (
            "transactions",
            {"record_id": f"t{i}", "customer_id": "c", "event_time": at, "country": country},
        )

    records = [txn(i, "DE", i * day) for i in range(3)]
    records += [txn(3, "FR", 3 * day), txn(4, "FR", 4 * day)]  # FR new once, then known
    records += [txn(5 + i, "DE", d * day) for i, d in enumerate((15, 28, 40))]  # still active
    records += [txn(8, "FR", 41 * day)]  # FR unseen for 37 days: new again
    records += [txn(9, "IT", 80 * day)]  # silent for 39 days: the whole profile expired
    result = run(detector, records)
    assert [a["source_record_id"] for a in result.alerts] == ["t3", "t8"]
    assert set(result.store("profiles")["transactions/c"]["countries"]) == {"IT"}
