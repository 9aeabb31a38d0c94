"""Realistic example records for every schema, for tests, documentation and smoke checks.

The records are written once for the latest version of each schema and projected onto older
versions (fields an older version lacks are dropped), so adding a schema version only means
adding its new fields here. Each schema has a fully populated record, one with every optional
field empty and, where it matters, edge values (non-ASCII text, big numbers, empty strings).
Timestamps are int epoch milliseconds, as the serde uses them.
"""

from __future__ import annotations

import copy
from typing import Any

from shared.avro.catalogue import Catalogue, load_catalogue

_T0 = 1_763_800_000_123  # 2025-11-22T08:26:40.123Z

_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "transaction": [
        {
            "record_id": "tx-2f1c9a7e",
            "customer_id": "cust-0042",
            "event_time": _T0,
            "amount": 129.99,
            "currency": "EUR",
            "merchant_id": "m-7731",
            "country": "DE",
            "channel": "ECOM",
            "card_last4": "4242",
            "mcc": "5732",
            "ip": "203.0.113.7",
            "device_id": "dev-9f3a11",
            "description": "Kopfhörer – Bestellung #77 🎧",
            "ingest_time": _T0 + 333,
            "merchant_name": "Elektro Müller GmbH",
            "attributes": {"order_id": "77", "3ds": "passed"},
        },
        {
            "record_id": "tx-000000002",
            "customer_id": "c",
            "event_time": 4_102_444_800_000,  # 2100-01-01
            "amount": 1.0e9,
            "currency": "JPY",
            "merchant_id": "m-1",
            "country": "JP",
            "channel": None,
            "card_last4": None,
            "mcc": None,
            "ip": None,
            "device_id": None,
            "description": None,
            "ingest_time": None,
            "merchant_name": None,
            "attributes": {},
        },
        {
            "record_id": "tx-small",
            "customer_id": "cust-0042",
            "event_time": 0,
            "amount": 0.01,
            "currency": "USD",
            "merchant_id": "m-0",
            "country": "US",
            "channel": "ATM",
            "card_last4": "0000",
            "mcc": "0742",
            "ip": "2001:db8::1",
            "device_id": "",
            "description": "",
            "ingest_time": 1,
            "merchant_name": "",
            "attributes": {"": "", "ключ": "значение"},
        },
    ],
    "login": [
        {
            "record_id": "lg-81d3",
            "customer_id": "cust-0042",
            "event_time": _T0,
            "country": "FR",
            "ip": "198.51.100.23",
            "device_id": "dev-9f3a11",
            "success": False,
            "user_agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
            "auth_method": "PASSWORD",
            "failure_reason": "BAD_PASSWORD",
            "ingest_time": _T0 + 12,
        },
        {
            "record_id": "lg-81d4",
            "customer_id": "cust-0042",
            "event_time": _T0 + 5_000,
            "country": "FR",
            "ip": "2001:db8::42",
            "device_id": "dev-9f3a11",
            "success": True,
            "user_agent": None,
            "auth_method": None,
            "failure_reason": None,
            "ingest_time": None,
        },
    ],
    "invalid_record": [
        {
            "original": b'{"record_id": "tx-9", "amount": -3}',
            "source_topic": "raw.transactions",
            "source_partition": 3,
            "source_offset": 9_007_199_254_740_993,  # beyond a double's exact integers
            "source_key": b"cust-0042",
            "error_code": "BAD_AMOUNT",
            "message": "amount must be a finite number > 0, got -3",
            "error_field": "amount",
            "ingest_time": _T0,
        },
        {
            "original": b"\x00\xff\xfe not json at all",
            "source_topic": "raw.logins",
            "source_partition": 0,
            "source_offset": 0,
            "source_key": None,
            "error_code": "NOT_JSON",
            "message": "value is not UTF-8 JSON",
            "error_field": None,
            "ingest_time": _T0 + 1,
        },
    ],
    "alert": [
        {
            "alert_id": "velocity:too-many-tx:tx-2f1c9a7e",
            "detector": "velocity",
            "detector_version": "1.4.0",
            "rule": "too-many-tx",
            "severity": "HIGH",
            "score": 0.97,
            "reason": "7 transactions in 60 s (limit 5)",
            "customer_id": "cust-0042",
            "source_record_id": "tx-2f1c9a7e",
            "source_topic": "records.transactions",
            "source_partition": 5,
            "source_offset": 123_456,
            "event_time": _T0,
            "detection_time": _T0 + 85,
            "evidence": {"count": "7", "window_s": "60", "limit": "5"},
        },
        {
            "alert_id": "geo:impossible-travel:lg-81d3",
            "detector": "geo",
            "detector_version": "0.1.0",
            "rule": "impossible-travel",
            "severity": "CRITICAL",
            "score": -1.5,
            "reason": "",
            "customer_id": "cust-0042",
            "source_record_id": "lg-81d3",
            "source_topic": "records.logins",
            "source_partition": 0,
            "source_offset": 0,
            "event_time": _T0,
            "detection_time": _T0,
            "evidence": {},
        },
    ],
    "notification": [
        {
            "notification_id": "n-velocity:too-many-tx:tx-2f1c9a7e:webhook",
            "alert_id": "velocity:too-many-tx:tx-2f1c9a7e",
            "channel": "WEBHOOK",
            "customer_id": "cust-0042",
            "severity": "HIGH",
            "message": "7 transactions in 60 s (limit 5)",
            "created_time": _T0 + 90,
            "status": "DELIVERED",
            "attempts": 2,
            "delivered_time": _T0 + 1_200,
            "last_error": "HTTP 503 from the webhook, retried",
            "latency_ms": 1_110,
            "source_time": _T0 - 2_000,
        },
        {
            "notification_id": "n-2",
            "alert_id": "geo:impossible-travel:lg-81d3",
            "channel": "TOPIC",
            "customer_id": "cust-0042",
            "severity": "LOW",
            "message": "impossible travel FR → JP",
            "created_time": _T0,
            "status": "PENDING",
            "attempts": 0,
            "delivered_time": None,
            "last_error": None,
            "latency_ms": None,
            "source_time": None,
        },
    ],
    "metric_snapshot": [
        {
            "instance_id": "detector-velocity@host-a:4711:9c2e",
            "service": "detector-velocity",
            "name": "process.latency",
            "type": "TIMER",
            "tags": {"topic": "records.transactions", "partition": "5"},
            "timestamp": _T0,
            "count": 1_048_576,
            "m1_rate": 1520.5,
            "m5_rate": 1490.25,
            "m15_rate": 1401.0,
            "mean_rate": 1377.7,
            "min": 0.08,
            "max": 412.0,
            "mean": 1.9,
            "stddev": 3.2,
            "p50": 1.1,
            "p75": 1.7,
            "p95": 4.4,
            "p98": 7.9,
            "p99": 12.5,
            "p999": 250.0,
            "value": None,
            "duration_unit": "ms",
            "rate_unit": "events/s",
        },
        {
            "instance_id": "ingest@host-b:1:0001",
            "service": "ingest",
            "name": "consumer.lag",
            "type": "GAUGE",
            "tags": {},
            "timestamp": _T0,
            "count": None,
            "m1_rate": None,
            "m5_rate": None,
            "m15_rate": None,
            "mean_rate": None,
            "min": None,
            "max": None,
            "mean": None,
            "stddev": None,
            "p50": None,
            "p75": None,
            "p95": None,
            "p98": None,
            "p99": None,
            "p999": None,
            "value": 42.0,
            "duration_unit": None,
            "rate_unit": None,
        },
        {
            "instance_id": "notifier@host-c:77:ab",
            "service": "notifier",
            "name": "alerts.received",
            "type": "COUNTER",
            "tags": {"detector": "velocity"},
            "timestamp": _T0,
            "count": 9_223_372_036_854_775_807,  # the largest long
            "m1_rate": None,
            "m5_rate": None,
            "m15_rate": None,
            "mean_rate": None,
            "min": None,
            "max": None,
            "mean": None,
            "stddev": None,
            "p50": None,
            "p75": None,
            "p95": None,
            "p98": None,
            "p99": None,
            "p999": None,
            "value": None,
            "duration_unit": None,
            "rate_unit": None,
        },
    ],
    "window_count": [
        {
            "source_topic": "raw.transactions",
            "window_start": 1_763_800_000_000,
            "window_end": 1_763_800_001_000,
            "status": "VALID",
            "count": 1873,
            "updated_time": 1_763_800_001_250,
        },
        {
            "source_topic": "raw.logins",
            "window_start": 1_763_800_000_000,
            "window_end": 1_763_800_001_000,
            "status": "LATE",
            "count": 0,
            "updated_time": 1_763_800_009_000,
        },
    ],
}


def example_names() -> list[str]:
    """Schema names that have examples."""
    return sorted(_EXAMPLES)


def examples(
    name: str, version: int | None = None, *, catalogue: Catalogue | None = None
) -> list[dict[str, Any]]:
    """Fresh copies of the example records of ``name``, with exactly that version's fields."""
    sv = (catalogue or load_catalogue()).get(name, version)
    fields = [f["name"] for f in sv.parsed["fields"]]
    records = []
    for example in _EXAMPLES[name]:
        missing = [f for f in fields if f not in example]
        if missing:
            raise KeyError(f"examples of {sv.label} lack field(s) {', '.join(missing)}")
        records.append({f: copy.deepcopy(example[f]) for f in fields})
    return records
