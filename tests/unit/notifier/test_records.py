"""The notifier's records: a Notification that encodes with the contract's schema, and the JSON
body a webhook receives."""

from __future__ import annotations

import datetime
import json

from services.notifier.book import DeliveryBook
from services.notifier.records import notification_value, webhook_body
from shared.avro import AvroDeserializer, AvroSerializer

DETECTED = datetime.datetime(2026, 11, 24, 12, 0, 0, 250000, tzinfo=datetime.UTC)


def _alert() -> dict:
    return {"alert_id": "a1", "detector": "large_amount", "rule": "above_p99",
            "severity": "HIGH", "reason": "amount 9000 above 5000", "customer_id": "c7",
            "detection_time": DETECTED, "score": 1.5}  # fmt: skip


def test_a_notification_encodes_with_the_schema_and_says_how_far_the_delivery_got() -> None:
    book = DeliveryBook(ttl_s=60)
    (pending,) = book.admit(_alert(), ["team"], now_s=1_795_000_000.0,
                            source_ms=1_794_999_998_000)  # fmt: skip
    value = notification_value(pending, _alert())
    assert (value["notification_id"], value["status"], value["delivered_time"]) == (
        "a1/team", "PENDING", None
    )  # fmt: skip
    assert value["latency_ms"] is None  # not finished yet
    done = book.attempted(pending, 1_795_000_002.5, delivered=True)
    value = notification_value(done, _alert())
    decoded = AvroDeserializer("notification").decode(AvroSerializer("notification").encode(value))
    assert decoded["status"] == "DELIVERED" and decoded["attempts"] == 1
    assert decoded["message"] == "large_amount/above_p99: amount 9000 above 5000"
    created, delivered = decoded["created_time"], decoded["delivered_time"]
    assert delivered - created == decoded["latency_ms"] == 2500  # milliseconds
    assert delivered - decoded["source_time"] == 4500  # raw record to notification


def test_a_failed_notification_carries_its_last_error() -> None:
    book = DeliveryBook(ttl_s=60)
    (pending,) = book.admit(_alert(), ["team"], now_s=0.0)
    failed = book.attempted(pending, 1.0, delivered=False, error="HTTP 400", retry_in_s=None)
    value = notification_value(failed, _alert())
    assert (value["status"], value["last_error"]) == ("FAILED", "HTTP 400")
    AvroSerializer("notification").encode(value)  # raises if it does not fit the schema


def test_the_webhook_body_is_the_alert_as_json_with_iso_times() -> None:
    body = json.loads(webhook_body(_alert()))
    assert body["alert_id"] == "a1" and body["score"] == 1.5
    assert body["detection_time"] == "2026-11-24T12:00:00.250000Z"
