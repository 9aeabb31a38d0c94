"""The state-at-scale feed: a million customers, each twice, all inside one minute of event time."""

from __future__ import annotations

from bench.scenarios import state_scale
from shared.avro import AvroSerializer


def test_the_feed_holds_every_customer_twice_within_the_span(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(state_scale, "CUSTOMERS", 50)
    monkeypatch.setattr(state_scale, "RECORDS", 100)
    records = list(state_scale.transactions(0, 100, 1_790_000_000_000))
    customers = [r["customer_id"] for _, r in records]
    assert len(set(customers)) == 50 and all(customers.count(c) == 2 for c in set(customers))
    times = [r["event_time"] for _, r in records]
    assert times == sorted(times)
    assert times[-1] - times[0] < state_scale.EVENT_SPAN_MS  # nothing expires during the run
    assert all(key == r["customer_id"].encode() for key, r in records)


def test_its_records_are_valid_transactions() -> None:
    encode = AvroSerializer("transaction").encode
    for _, record in state_scale.transactions(999_990, 20, 1_790_000_000_000):
        assert encode(record)
