"""Property tests: any valid transaction round-trips; no byte string escapes as a foreign error."""

from __future__ import annotations

import contextlib
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, settings

from shared.avro import AvroDeserializer, AvroSerializer, DecodeError, load_catalogue
from shared.avro.single_object import frame

CATALOGUE = load_catalogue()
ENCODE = {
    sv.version: AvroSerializer("transaction", sv.version)
    for sv in CATALOGUE.versions("transaction")
}
DECODE_LATEST = AvroDeserializer("transaction")
LATEST = CATALOGUE.get("transaction")

longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
texts = st.text(max_size=40)
optional_texts = st.none() | texts

REQUIRED = {
    "record_id": texts.filter(bool),
    "customer_id": texts.filter(bool),
    "event_time": longs,
    "amount": st.floats(allow_nan=False),
    "currency": st.sampled_from(["EUR", "USD", "JPY", "CHF"]),
    "merchant_id": texts,
    "country": st.sampled_from(["DE", "FR", "US", "JP"]),
}
OPTIONAL = {
    "channel": st.none() | st.sampled_from(["POS", "ECOM", "ATM", "MOTO", "TRANSFER"]),
    "card_last4": optional_texts,
    "mcc": optional_texts,
    "ip": optional_texts,
    "device_id": optional_texts,
    "description": optional_texts,
    "ingest_time": st.none() | longs,
    "merchant_name": optional_texts,
    "attributes": st.dictionaries(texts, texts, max_size=5),
}


@st.composite
def transactions(draw: st.DrawFn) -> tuple[int, dict[str, Any]]:
    """(writer version, a record of that version with some optional fields left out)."""
    version = draw(st.sampled_from(sorted(ENCODE)))
    fields = {f["name"] for f in CATALOGUE.get("transaction", version).parsed["fields"]}
    optional = {k: v for k, v in OPTIONAL.items() if k in fields}
    assert set(REQUIRED) | set(optional) == fields, "strategies out of date with the schema"
    return version, draw(st.fixed_dictionaries(REQUIRED, optional=optional))


@settings(max_examples=300, deadline=None, database=None)
@given(transactions())
def test_any_transaction_round_trips_to_the_latest_reader(case: tuple[int, dict[str, Any]]) -> None:
    version, record = case
    decoded = DECODE_LATEST.decode(ENCODE[version].encode(record))
    expected = {f["name"]: record.get(f["name"], f.get("default")) for f in LATEST.parsed["fields"]}
    assert decoded == expected


@settings(max_examples=500, deadline=None, database=None)
@given(st.sampled_from(sorted(ENCODE)), st.binary(max_size=200))
def test_any_body_decodes_or_raises_a_decode_error(version: int, body: bytes) -> None:
    message = frame(CATALOGUE.get("transaction", version).fingerprint, body)
    try:
        record = DECODE_LATEST.decode(message)
    except DecodeError:
        return
    # A body that happens to be valid (and is consumed exactly) yields a complete record.
    assert set(record) == {f["name"] for f in LATEST.parsed["fields"]}


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=64))
def test_any_byte_string_decodes_or_raises_a_decode_error(message: bytes) -> None:
    with contextlib.suppress(DecodeError):
        DECODE_LATEST.decode(message)
