"""The backtest's replay without Spark: Arrow batches in, the same alerts as the harness out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from services.backtest.replay import (
    ALERT_ARROW_SCHEMA,
    OFFSET,
    PARTITION,
    RECORD_TYPE,
    TIMESTAMP_MS,
    TOPIC,
    RecordShape,
    ReplayCounts,
    replay,
)
from shared.detector import Context, KeyValue, detector, harness
from shared.detector.loading import load_detector
from shared.kafka.partitioner import partition_for

T0 = 1_700_000_000_000
FIELDS = ["record_id", "customer_id", "event_time", "amount", "currency", "country", "attributes"]
LOGIN_FIELDS = ["record_id", "customer_id", "event_time", "country"]
SHAPE = RecordShape(
    fields={"transactions": FIELDS, "logins": LOGIN_FIELDS}, maps={"transactions": ["attributes"]}
)


def _transactions(count: int) -> list[dict[str, Any]]:
    """Bursts of one customer's transactions, some large, a few customers."""
    return [
        {"record_id": f"t{i}", "customer_id": f"c{i % 4}", "event_time": T0 + i * 2_000,
         "amount": 25_000.0 if i % 11 == 0 else 20.0, "currency": "EUR", "country": "DE",
         "attributes": {"i": str(i)}}
        for i in range(count)
    ]  # fmt: skip


def _batches(
    rows: list[tuple[str, dict[str, Any]]], partitions: int, size: int
) -> Iterator[pa.RecordBatch]:
    """Replay rows as Spark hands them over: by partition, then Kafka timestamp (offset order
    within each topic); maps as pairs."""
    offsets: dict[tuple[str, int], int] = {}
    table = []
    for n, (kind, record) in enumerate(rows):
        p = partition_for(record["customer_id"].encode(), partitions)
        offset = offsets[(kind, p)] = offsets.get((kind, p), -1) + 1
        row = {RECORD_TYPE: kind, PARTITION: p, TOPIC: f"records.{kind}", OFFSET: offset,
               TIMESTAMP_MS: T0 + n}  # fmt: skip
        row.update({f: record.get(f) for f in FIELDS})
        if "attributes" in record:
            row["attributes"] = list(record["attributes"].items())
        table.append(row)
    table.sort(key=lambda r: (r[PARTITION], r[TIMESTAMP_MS]))
    schema = pa.schema([
        (RECORD_TYPE, pa.string()), (PARTITION, pa.int32()), (TOPIC, pa.string()),
        (OFFSET, pa.int64()), (TIMESTAMP_MS, pa.int64()),
        ("record_id", pa.string()), ("customer_id", pa.string()), ("event_time", pa.int64()),
        ("amount", pa.float64()), ("currency", pa.string()), ("country", pa.string()),
        ("attributes", pa.map_(pa.string(), pa.string())),
    ])  # fmt: skip
    if len({kind for kind, _ in rows}) == 1:  # one input: Spark sends no record type column
        schema = schema.remove(schema.get_field_index(RECORD_TYPE))
    for start in range(0, len(table), size):
        yield pa.RecordBatch.from_pylist(table[start : start + size], schema=schema)


@pytest.mark.parametrize("name", ["velocity", "large_amount"])
def test_a_reference_detector_raises_the_harness_alerts_with_the_same_ids(name: str) -> None:
    detector, _ = load_detector(f"detectors/{name}")
    records = [("transactions", r) for r in _transactions(600)]
    counts = ReplayCounts()
    out = list(replay(detector, _batches(records, 3, 64), SHAPE, counts))
    got = pa.Table.from_batches(out, schema=ALERT_ARROW_SCHEMA).to_pylist()
    expected = harness.run(detector, records, partitions=3).alerts
    assert expected, "the feed must make the detector alert, or the comparison proves nothing"
    assert sorted(a["alert_id"] for a in got) == sorted(a["alert_id"] for a in expected)
    assert counts.records == 600 and counts.failures == 0
    # detection_time is the record's Kafka timestamp, not a wall clock.
    assert all(T0 <= a["detection_time"] < T0 + 600 for a in got)


def test_each_record_is_its_own_type_with_maps_as_dicts_and_state_per_partition() -> None:
    seen: list[tuple[int, str, dict[str, Any]]] = []

    @detector(name="probe", version="1", inputs=["transactions", "logins"],
              state=[KeyValue("n")])  # fmt: skip
    def probe(record: dict[str, Any], ctx: Context) -> None:
        store = ctx.kv("n")
        store.set(record["customer_id"], (store.get(record["customer_id"]) or 0) + 1)
        seen.append((ctx.partition, ctx.record_type, dict(record), len(store)))

    rows = [("transactions", r) for r in _transactions(8)]
    rows.insert(3, ("logins", {"record_id": "l1", "customer_id": "c1", "event_time": T0,
                               "country": "FR"}))  # fmt: skip
    list(replay(probe, _batches(rows, 2, 4), SHAPE))
    login = next(r for _, kind, r, _ in seen if kind == "logins")
    assert set(login) == set(LOGIN_FIELDS)  # no transaction field leaks into a login
    transaction = next(r for _, kind, r, _ in seen if kind == "transactions")
    assert set(transaction) == set(FIELDS) and transaction["attributes"] == {"i": "0"}
    # A task per partition: a store never holds a customer of another partition.
    for partition in {p for p, *_ in seen}:
        sizes = [n for p, _, _, n in seen if p == partition]
        customers = {r["customer_id"] for p, _, r, _ in seen if p == partition}
        assert max(sizes) == len(customers)


def test_a_record_detect_fails_on_is_counted_and_the_replay_goes_on() -> None:
    @detector(name="picky", version="1", inputs=["transactions"])
    def picky(record: dict[str, Any], ctx: Context) -> Any:
        if record["record_id"] == "t3":
            raise ValueError("cannot read this one")
        return ctx.alert("seen", severity="LOW", score=1.0, reason="seen")

    counts = ReplayCounts()
    rows = [("transactions", r) for r in _transactions(10)]
    out = list(replay(picky, _batches(rows, 1, 4), SHAPE, counts))
    assert sum(b.num_rows for b in out) == 9
    assert counts.failures == 1
    assert counts.first_failure.startswith("records.transactions[0]@3: ")
    assert "ValueError: cannot read this one" in counts.first_failure


def test_records_are_built_for_any_field_name_and_for_no_field_at_all() -> None:
    from services.backtest.replay import _records

    odd = ["it's", 'say "hi"', "ünïcode", "c0"]
    columns = {name: [f"{name}-{row}" for row in range(3)] for name in odd}
    types = ["transactions"] * 3
    shape = RecordShape(fields={"transactions": odd})
    assert _records(columns, types, shape) == [
        {name: f"{name}-{row}" for name in odd} for row in range(3)
    ]
    assert _records({}, types, RecordShape(fields={"transactions": []})) == [{}, {}, {}]
