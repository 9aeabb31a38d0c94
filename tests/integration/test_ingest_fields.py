"""The fast field reading (typed from_json) decides exactly as the exact one (VARIANT) does.

classify() reads a field through from_json when that reading is certain and through the parsed
VARIANT otherwise (services/ingest/typed_fields.py). On a real Spark session, every generated
record (valid ones, and every malformed kind of the load generator) and a list of records built to
sit on the edges between the two readings get the same outcome, error code, field and message
from ``classify`` as from ``classify(exact_only=True)``, and valid ones the same typed values.
"""

from __future__ import annotations

import datetime
import json
import time

import pytest
from pyspark.sql import functions as F

from services.ingest.typed_fields import value_column
from services.ingest.validation import ERROR, checked_types, classify
from shared.avro.catalogue import Catalogue
from shared.settings import Settings
from tools.loadgen import StreamConfig, generate

pytestmark = pytest.mark.integration

MAX_BYTES = 16 * 1024
_BASE = {"record_id": "r1", "customer_id": "c1", "event_time": 1_700_000_000_000,
         "amount": 12.5, "currency": "EUR", "merchant_id": "m1", "country": "DE"}  # fmt: skip
_LOGIN = {"record_id": "l1", "customer_id": "c1", "event_time": 1_700_000_000_000,
          "country": "DE", "ip": "10.0.0.1", "device_id": "d1", "success": True}  # fmt: skip


def _edge_cases() -> list[tuple[str, bytes]]:
    """Values the two readings could tell apart if the fast one trusted too much."""
    edits = [
        {"customer_id": 12345}, {"customer_id": "12345"}, {"customer_id": "-7"},
        {"customer_id": "true"}, {"customer_id": True}, {"customer_id": "{x}"},
        {"customer_id": {"id": 1}}, {"customer_id": [1, 2]}, {"customer_id": "[1]"},
        {"customer_id": None}, {"customer_id": ""}, {"customer_id": " 12"},
        {"customer_id": "1e3"}, {"merchant_id": "0"}, {"record_id": "007"},
        {"amount": "12.5"}, {"amount": "NaN"}, {"amount": "Infinity"}, {"amount": 100},
        {"amount": 1e300}, {"amount": -0.0}, {"amount": 0}, {"amount": True},
        {"amount": 12345678901234567890}, {"amount": 0.1},
        {"event_time": "1700000000000"}, {"event_time": 1.7e12}, {"event_time": 1e3},
        {"event_time": 99999999999999999999}, {"event_time": -1}, {"event_time": None},
        {"currency": "eur"}, {"currency": 978}, {"country": ["DE"]},
        {"channel": 5}, {"channel": "POS"}, {"mcc": "0742"}, {"mcc": 742},
        {"attributes": {"a": "1", "b": 2, "c": None, "d": {"e": 1}, "f": [1]}},
        {"attributes": "none"}, {"attributes": []}, {"attributes": {}},
        {"Amount": 5}, {"CUSTOMER_ID": "x"}, {"extra": {"customer_id": 5}},
        {"description": "é \\u00e9 \u2028 \"q\""},
    ]  # fmt: skip
    cases = []
    for edit in edits:
        record = {**_BASE, **edit}
        cases.append(("transactions", json.dumps(record).encode()))
        missing = {k: v for k, v in record.items() if k not in edit or edit[k] is not None}
        cases.append(("transactions", json.dumps(missing).encode()))
    for edit in [{"success": "true"}, {"success": 1}, {"success": None}, {"ip": 10},
                 {"device_id": "1"}, {"failure_reason": False}]:  # fmt: skip
        cases.append(("logins", json.dumps({**_LOGIN, **edit}).encode()))
    cases += [("transactions", b'{"record_id": "r", "amount": 1, "amount": 2}'),
              ("transactions", b"[1, 2]"), ("transactions", b'"text"'), ("transactions", b"12"),
              ("transactions", b'{"amount": NaN}'), ("transactions", b"{}"),
              ("logins", b'  {"record_id": "x"}  ')]  # fmt: skip
    return cases


def _rows(spark):  # type: ignore[no-untyped-def]
    now = int(time.time() * 1000)
    stream = StreamConfig(start_time_ms=now - 60_000, count=3000, seed=31, invalid_share=0.3,
                          event_rate=200, max_record_bytes=MAX_BYTES)  # fmt: skip
    records = [(r.topic_suffix, r.value) for r in generate(stream)] + _edge_cases()
    arrival = datetime.datetime.fromtimestamp(now / 1000, tz=datetime.UTC)
    rows = [(b"k", value, f"raw.{kind}", 0, offset, arrival, 0, [])
            for offset, (kind, value) in enumerate(records)]  # fmt: skip
    schema = ("key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int, "
              "headers array<struct<key: string, value: binary>>")  # fmt: skip
    return spark.createDataFrame(rows, schema), len(records)


def _outcomes(frame, types, exact_only: bool) -> dict:  # type: ignore[no-untyped-def]
    fields = sorted({f.name for t in types.values() for f in t.record_type.fields})
    classified = classify(frame, types, MAX_BYTES, exact_only=exact_only)
    values = F.to_json(F.struct(*[F.col(value_column(n)).alias(n) for n in fields]))
    chosen = classified.select("offset", F.to_json(F.col(ERROR)).alias("error"), values.alias("v"))
    # Values matter only where they are routed: an invalid record goes out as its original bytes
    # (so -0.0 read as -0.0 or 0.0 in an amount refused as not positive changes nothing).
    return {
        row.offset: (row.error, row.v if row.error is None else None) for row in chosen.collect()
    }


def test_the_fast_reading_gives_every_record_the_exact_readings_outcome(spark):
    types = checked_types(Catalogue.load(Settings().schemas_dir))
    frame, count = _rows(spark)
    fast = _outcomes(frame, types, exact_only=False)
    exact = _outcomes(frame, types, exact_only=True)
    assert len(fast) == len(exact) == count
    differing = {o: (fast[o], exact[o]) for o in exact if fast[o] != exact[o]}
    assert not differing, f"{len(differing)} records differ, e.g. {next(iter(differing.items()))}"
    # The comparison covers both outcomes and many reasons, not one kind of record.
    codes = {json.loads(e)["code"] if e else "VALID" for e, _ in exact.values()}
    assert {"VALID", "WRONG_TYPE", "MISSING_FIELD", "NOT_JSON", "NOT_OBJECT"} <= codes, codes
