"""Encoding and decoding single-object messages, with resolution across versions."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext

from shared.avro import (
    AvroDeserializer,
    AvroSerializer,
    Catalogue,
    CorruptRecordError,
    EncodeError,
    IncompatibleSchemaError,
    NotSingleObjectError,
    SchemaVersion,
    UnknownFingerprintError,
    load_catalogue,
)
from shared.avro.compiled import CHOICE_VARIABLE, available
from shared.avro.single_object import HEADER_SIZE, frame
from testkit.avro_examples import example_names, examples

CATALOGUE = load_catalogue()
VERSIONS = list(CATALOGUE)
PAIRS = [pair for name in CATALOGUE.names() for pair in pairwise(CATALOGUE.versions(name))]


@pytest.fixture(autouse=True, params=["compiled", "fastavro"])
def decoder_choice(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with each decoder: the compiled one (where it is built) and fastavro,
    which keeps decoding writers of other versions (shared/avro/compiled.py)."""
    if request.param == "fastavro":
        monkeypatch.setenv(CHOICE_VARIABLE, "fastavro")
    elif not available():
        pytest.skip("the compiled decoder is not built: make venv builds it (needs cargo)")
    return str(request.param)


def _ids(sv: SchemaVersion) -> str:
    return f"{sv.name}-v{sv.version}"


def _pair_id(pair: tuple[SchemaVersion, SchemaVersion]) -> str:
    return f"{pair[0].name}-v{pair[0].version}-v{pair[1].version}"


def test_every_schema_has_examples() -> None:
    assert example_names() == CATALOGUE.names()


@pytest.mark.parametrize("sv", VERSIONS, ids=_ids)
def test_every_schema_version_round_trips(sv: SchemaVersion) -> None:
    encode = AvroSerializer(sv.name, sv.version)
    decode = AvroDeserializer(sv.name, sv.version)
    for record in examples(sv.name, sv.version):
        message = encode(record, None)
        assert message[:2] == b"\xc3\x01"
        assert message[2:HEADER_SIZE] == sv.fingerprint
        assert decode(message, None) == record


def test_timestamps_stay_int_epoch_milliseconds() -> None:
    record = examples("transaction")[0]
    decoded = AvroDeserializer("transaction").decode(AvroSerializer("transaction").encode(record))
    assert type(decoded["event_time"]) is int
    assert decoded["event_time"] == record["event_time"]


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_old_bytes_read_with_new_reader_get_the_new_defaults(
    pair: tuple[SchemaVersion, SchemaVersion],
) -> None:
    old, new = pair
    encode_old = AvroSerializer(old.name, old.version)
    decode_new = AvroDeserializer(new.name, new.version)
    old_fields = {f["name"] for f in old.parsed["fields"]}
    added = [f for f in new.parsed["fields"] if f["name"] not in old_fields]
    assert added, f"{new.label} adds no field: the resolution test would prove nothing"
    for record in examples(old.name, old.version):
        decoded = decode_new(encode_old(record, None), None)
        expected = {
            f["name"]: record[f["name"]] if f["name"] in old_fields else f["default"]
            for f in new.parsed["fields"]
        }
        assert decoded == expected


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_new_bytes_read_with_old_reader_drop_the_new_fields(
    pair: tuple[SchemaVersion, SchemaVersion],
) -> None:
    old, new = pair
    encode_new = AvroSerializer(new.name, new.version)
    decode_old = AvroDeserializer(old.name, old.version)
    old_fields = [f["name"] for f in old.parsed["fields"]]
    for record in examples(new.name, new.version):
        decoded = decode_old(encode_new(record, None), None)
        assert decoded == {name: record[name] for name in old_fields}


def test_the_v2_sample_really_differs_from_v1() -> None:
    # Guards the two tests above: v1 and v2 messages must not be interchangeable bytes.
    v1 = AvroSerializer("transaction", 1).encode(examples("transaction", 1)[0])
    v2 = AvroSerializer("transaction", 2).encode(examples("transaction", 2)[0])
    assert v1[2:HEADER_SIZE] != v2[2:HEADER_SIZE]
    assert len(v2) > len(v1)


def test_unknown_fingerprint_is_an_error_naming_it() -> None:
    body = AvroSerializer("transaction").encode(examples("transaction")[0])[HEADER_SIZE:]
    stranger = bytes.fromhex("0123456789abcdef")
    with pytest.raises(UnknownFingerprintError, match="0123456789abcdef") as caught:
        AvroDeserializer("transaction").decode(frame(stranger, body))
    assert caught.value.fingerprint == stranger
    assert caught.value.fingerprint_hex == "0123456789abcdef"


def test_a_fingerprint_from_a_newer_schemas_folder_is_unknown(catalogue: Catalogue) -> None:
    # A consumer deployed with only transaction v1 receives a v2 message.
    only_v1 = Catalogue([sv for sv in catalogue if sv.label != "transaction v2"])
    message = AvroSerializer("transaction", 2, catalogue=catalogue).encode(
        examples("transaction", 2)[0]
    )
    with pytest.raises(UnknownFingerprintError):
        AvroDeserializer("transaction", catalogue=only_v1).decode(message)


def test_another_record_type_is_incompatible_and_names_the_fields() -> None:
    login = AvroSerializer("login").encode(examples("login")[0])
    with pytest.raises(IncompatibleSchemaError, match=r"mesh\.Login.*mesh\.Transaction") as caught:
        AvroDeserializer("transaction").decode(login)
    assert caught.value.problems == (
        "transaction: writer record mesh.Login cannot be read as record mesh.Transaction: the "
        "names differ and the reader has no alias for the writer's name",
    )


def test_json_on_an_avro_topic_is_not_single_object() -> None:
    with pytest.raises(NotSingleObjectError, match="C3 01"):
        AvroDeserializer("transaction").decode(b'{"record_id": "tx-1", "amount": 3.5}')


def test_every_truncation_is_a_decode_error() -> None:
    message = AvroSerializer("transaction").encode(examples("transaction")[0])
    decode = AvroDeserializer("transaction").decode
    for length in range(len(message)):
        expected = NotSingleObjectError if length < HEADER_SIZE else CorruptRecordError
        with pytest.raises(expected):
            decode(message[:length])


@pytest.mark.parametrize("garbage", [b"\x00", b"\x02xx", b"trailing garbage"])
def test_trailing_bytes_are_corrupt(garbage: bytes) -> None:
    message = AvroSerializer("login").encode(examples("login")[0])
    with pytest.raises(CorruptRecordError, match=f"{len(garbage)} unexpected byte"):
        AvroDeserializer("login").decode(message + garbage)


def test_invalid_utf8_in_a_string_is_corrupt() -> None:
    record = examples("login")[0] | {"record_id": "RID1"}
    message = AvroSerializer("login").encode(record)
    assert message.count(b"RID1") == 1
    with pytest.raises(CorruptRecordError, match="login v1"):
        AvroDeserializer("login").decode(message.replace(b"RID1", b"\xff\xfe\xfd\xfc"))


def test_a_negative_string_length_is_corrupt() -> None:
    record = examples("window_count")[0]
    message = AvroSerializer("window_count").encode(record)
    # The first field is a string; its zig-zag length byte is right after the header.
    assert message[HEADER_SIZE] == 2 * len(record["source_topic"])
    broken = message[:HEADER_SIZE] + b"\x01" + message[HEADER_SIZE + 1 :]  # zig-zag -1
    with pytest.raises(CorruptRecordError):
        AvroDeserializer("window_count").decode(broken)


def test_decode_many_keeps_order_and_can_return_errors_in_place() -> None:
    encode = AvroSerializer("alert")
    good = [encode(r, None) for r in examples("alert")]
    decode = AvroDeserializer("alert")
    batch: list[bytes] = [good[0], b"not avro", good[1], good[1][:-1]]
    results = decode.decode_many(batch, return_errors=True)
    assert results[0] == examples("alert")[0]
    assert isinstance(results[1], NotSingleObjectError)
    assert results[2] == examples("alert")[1]
    assert isinstance(results[3], CorruptRecordError)
    with pytest.raises(NotSingleObjectError):
        decode.decode_many(batch)
    assert decode.decode_many(good) == examples("alert")


def test_callables_pass_tombstones_through() -> None:
    assert AvroSerializer("transaction")(None, None) is None
    assert AvroDeserializer("transaction")(None, None) is None


def test_errors_note_the_topic_from_the_context() -> None:
    ctx = SerializationContext("records.transactions", MessageField.VALUE)
    with pytest.raises(NotSingleObjectError) as caught:
        AvroDeserializer("transaction")(b"nope", ctx)
    assert "topic: records.transactions" in caught.value.__notes__
    with pytest.raises(EncodeError) as encode_caught:
        AvroSerializer("transaction")({"record_id": "x"}, ctx)
    assert "topic: records.transactions" in encode_caught.value.__notes__


def _transaction(**changes: Any) -> dict[str, Any]:
    record = examples("transaction")[0]
    record.update(changes)
    return {k: v for k, v in record.items() if v is not _DROP}


_DROP = object()


def test_missing_required_field_is_an_encode_error_naming_it() -> None:
    with pytest.raises(EncodeError, match="amount"):
        AvroSerializer("transaction").encode(_transaction(amount=_DROP))


@pytest.mark.parametrize("amount", ["12.50", True, None, [1.0]])
def test_mistyped_amount_is_an_encode_error_naming_it(amount: object) -> None:
    with pytest.raises(EncodeError, match=r"amount"):
        AvroSerializer("transaction").encode(_transaction(amount=amount))


def test_an_int_amount_is_a_valid_double() -> None:
    message = AvroSerializer("transaction").encode(_transaction(amount=12))
    assert AvroDeserializer("transaction").decode(message)["amount"] == 12.0


def test_mistyped_field_is_an_encode_error_naming_it() -> None:
    with pytest.raises(EncodeError, match="record_id"):
        AvroSerializer("transaction").encode(_transaction(record_id=17))
    with pytest.raises(EncodeError, match="event_time"):
        AvroSerializer("transaction").encode(_transaction(event_time="2025-11-22T10:00:00Z"))


def test_unknown_field_is_refused_when_strict_and_ignored_otherwise() -> None:
    record = _transaction(ammount=3.0)
    with pytest.raises(EncodeError, match="ammount"):
        AvroSerializer("transaction").encode(record)
    lenient = AvroSerializer("transaction", strict=False).encode(record)
    assert "ammount" not in AvroDeserializer("transaction").decode(lenient)


def test_omitted_optional_fields_take_their_defaults() -> None:
    sv = CATALOGUE.get("transaction")
    required = {f["name"] for f in sv.parsed["fields"] if "default" not in f}
    full = examples("transaction")[0]
    minimal = {k: v for k, v in full.items() if k in required}
    decoded = AvroDeserializer("transaction").decode(AvroSerializer("transaction").encode(minimal))
    for f in sv.parsed["fields"]:
        expected = full[f["name"]] if f["name"] in required else f["default"]
        assert decoded[f["name"]] == expected, f["name"]


@pytest.mark.parametrize(
    ("event_time", "why"),
    [(1_763_800_000.5, "float"), (True, "bool"), (2**63, "outside the long range")],
)
def test_a_long_field_refuses_values_fastavro_would_alter(event_time: object, why: str) -> None:
    # fastavro alone would truncate 1763800000.5 to 1763800000 and write True as 1.
    with pytest.raises(EncodeError, match=f"event_time: expected long, got .*{why}"):
        AvroSerializer("transaction").encode(_transaction(event_time=event_time))


def test_encode_errors_do_not_quote_values() -> None:
    secret = "4111-1111-1111-1111"
    with pytest.raises(EncodeError) as caught:
        AvroSerializer("transaction").encode(_transaction(card_last4=4242, description=secret))
    assert "card_last4" in str(caught.value)
    assert secret not in str(caught.value)


def test_a_schema_the_compiled_decoder_refuses_falls_back_to_fastavro() -> None:
    """A schema the compiled decoder cannot plan is read by fastavro, never a crash at start."""
    from shared.avro.compiled import compiled_decoder

    assert compiled_decoder('{"type": "no-such-type"}') is None
