"""The compiled decoder (native/avro_decoder) gives exactly fastavro's records, or refuses.

The reference is what the project runs today: fastavro's ``schemaless_reader`` with the
writer's ``codec_schema`` (no logical types), plus the check ``AvroDeserializer`` adds that the
record uses up the whole message. For valid messages the two decoders must agree value for
value (types, float bits, key order). For corrupt ones the native decoder must raise
``DecodeFailure`` wherever the reference raises; where the reference happens to accept a
corrupt message, the native decoder gives the same record or refuses with one of its known
stricter checks (:data:`STRICTER`), never anything else.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import random
import re
from io import BytesIO
from typing import Any

import fastavro
import hypothesis.strategies as st
import pytest
from fastavro.schema import to_parsing_canonical_form
from hypothesis import given, settings

from shared.avro import AvroDeserializer, DecodeError, SchemaVersion, load_catalogue
from shared.avro.single_object import HEADER_SIZE, header
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import encoders, valid_records

try:
    from mesh_avro_decoder import DecodeFailure, Decoder
except ImportError:  # pragma: no cover - depends on the build
    pytest.skip(
        "mesh_avro_decoder is not built: run `.venv/bin/pip install ./native/avro_decoder` "
        "(needs cargo; `make test` does it)",
        allow_module_level=True,
    )

CATALOGUE = load_catalogue()
VERSIONS = list(CATALOGUE)

#: Refusals of messages fastavro accepts, all on purpose: fastavro indexes the union branches
#: and enum symbols with a Python list (so -1 picks the last), reads any non-zero byte as True,
#: does not range-check an int and lets a 10-byte varint overflow silently.
STRICTER = re.compile(
    r"bad (union|enum) index -\d+|bad boolean byte|outside the 32-bit range|overflows 64 bits"
)


# -- comparing ---------------------------------------------------------------------------------


def assert_same(native: Any, reference: Any, where: str = "record") -> None:
    """Equal values of the same types; floats by value and sign (NaN equals NaN); dict order."""
    assert type(native) is type(reference), f"{where}: {type(native)} != {type(reference)}"
    if isinstance(reference, float):
        if math.isnan(reference):
            assert math.isnan(native), f"{where}: {native!r} != nan"
        else:
            same_sign = math.copysign(1, native) == math.copysign(1, reference)
            assert native == reference and same_sign, f"{where}: {native!r} != {reference!r}"
    elif isinstance(reference, dict):
        assert list(native) == list(reference), f"{where}: keys {list(native)} != {list(reference)}"
        for key in reference:
            assert_same(native[key], reference[key], f"{where}.{key}")
    elif isinstance(reference, list):
        assert len(native) == len(reference), f"{where}: {len(native)} != {len(reference)} items"
        for i, (a, b) in enumerate(zip(native, reference, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert native == reference, f"{where}: {native!r} != {reference!r}"


def reference_decode(body: bytes, codec_schema: Any) -> Any:
    """fastavro's record for ``body``, which it must use up (AvroDeserializer checks that too)."""
    stream = BytesIO(body)
    record = fastavro.schemaless_reader(stream, codec_schema, None)
    if stream.tell() != len(body):
        raise ValueError(f"{len(body) - stream.tell()} byte(s) left over")
    return record


def check_parity(decoder: Decoder, codec_schema: Any, body: bytes, prefix: bytes) -> str:
    """Apply the rule of the module docstring to one body; say which case it was."""
    try:
        expected = reference_decode(body, codec_schema)
    except Exception:  # fastavro raises EOFError, IndexError, UnicodeDecodeError, ...
        with pytest.raises(DecodeFailure):
            decoder.decode(prefix + body, len(prefix))
        return "both refused"
    try:
        got = decoder.decode(prefix + body, len(prefix))
    except DecodeFailure as exc:
        assert STRICTER.search(str(exc)), f"refused a message fastavro accepts: {exc}"
        return "refused by a stricter check"
    assert_same(got, expected)
    return "same record"


def encode(codec_schema: Any, record: Any) -> bytes:
    out = BytesIO()
    fastavro.schemaless_writer(out, codec_schema, record)
    return out.getvalue()


# -- random records of any schema ----------------------------------------------------------------

_CHARS = "abcXYZ019 _-é中😀\x00\u2028"
_INTS = [0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31)]
_LONGS = [*_INTS, 2**63 - 1, -(2**63), 2**53 + 1, 1_790_000_000_000]
_FLOAT32 = [0.0, -0.0, 1.5, -2.25, 3.4028234663852886e38, 1.401298464324817e-45, math.inf]
_DOUBLES = [0.0, -0.0, 0.1, -1e-300, 1.7976931348623157e308, 5e-324, -math.inf, 183.79]


class RandomValues:
    """Random values of a schema in Parsing Canonical Form, edge values mixed in.

    Deep down it prefers the non-recursive union branches and empty arrays and maps, so
    recursive schemas (lists, trees) give finite values.
    """

    def __init__(self, canonical_form: str, seed: int) -> None:
        self.schema = json.loads(canonical_form)
        self.rng = random.Random(seed)
        self.named: dict[str, Any] = {}
        self._collect_names(self.schema)

    def record(self) -> Any:
        return self.value(self.schema, 0)

    def _collect_names(self, node: Any) -> None:
        if isinstance(node, list):
            for branch in node:
                self._collect_names(branch)
        elif isinstance(node, dict):
            if "name" in node:
                self.named[node["name"]] = node
            for field in node.get("fields", []):
                self._collect_names(field["type"])
            for key in ("items", "values"):
                if key in node:
                    self._collect_names(node[key])

    def value(self, node: Any, depth: int) -> Any:
        rng = self.rng
        if isinstance(node, list):
            leaves = [b for b in node if not self._is_container(b)]
            branch = rng.choice(leaves if depth > 4 and leaves else node)
            return self.value(branch, depth)
        if isinstance(node, str):
            return self.value(self.named[node], depth) if node in self.named else self.prim(node)
        kind = node["type"]
        if kind == "record":
            return {f["name"]: self.value(f["type"], depth + 1) for f in node["fields"]}
        if kind == "enum":
            return rng.choice(node["symbols"])
        if kind == "fixed":
            return rng.randbytes(node["size"])
        size = 0 if depth > 4 else rng.choice([0, 1, 2, 5])
        if kind == "array":
            return [self.value(node["items"], depth + 1) for _ in range(size)]
        if kind == "map":
            return {self.text(): self.value(node["values"], depth + 1) for _ in range(size)}
        return self.prim(kind)

    def _is_container(self, node: Any) -> bool:
        node = self.named.get(node, node) if isinstance(node, str) else node
        return isinstance(node, dict) and node["type"] in ("record", "array", "map")

    def prim(self, kind: str) -> Any:
        rng = self.rng
        edge = rng.random() < 0.3
        if kind == "null":
            return None
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "int":
            return rng.choice(_INTS) if edge else rng.randint(-(2**31), 2**31 - 1)
        if kind == "long":
            return rng.choice(_LONGS) if edge else rng.randint(-(2**63), 2**63 - 1)
        if kind == "float":
            # Only values a float32 holds exactly, so encoding does not round them.
            return rng.choice(_FLOAT32) if edge else float(rng.randint(-(2**24), 2**24)) / 8
        if kind == "double":
            return rng.choice(_DOUBLES) if edge else rng.uniform(-1e6, 1e6)
        if kind == "bytes":
            return rng.randbytes(rng.choice([0, 1, 7, 40]))
        if kind == "string":
            return self.text()
        raise AssertionError(f"unknown primitive {kind}")

    def text(self) -> str:
        return "".join(self.rng.choices(_CHARS, k=self.rng.choice([0, 1, 3, 12, 70])))


# -- hand-made schemas: every type the canonical form can hold ------------------------------------

INNER = {"type": "record", "name": "t.Inner", "fields": [{"name": "n", "type": "long"}]}
COLOUR = {"type": "enum", "name": "t.Colour", "symbols": ["RED", "GREEN", "BLUE"]}
HASH = {"type": "fixed", "name": "t.Hash", "size": 4}

HAND_MADE: dict[str, dict[str, Any]] = {
    "primitives": {
        "type": "record",
        "name": "t.Primitives",
        "fields": [
            {"name": k, "type": k}
            for k in ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
        ],
    },
    "named": {
        "type": "record",
        "name": "t.Named",
        "fields": [
            {"name": "colour", "type": COLOUR},
            {"name": "hash", "type": HASH},
            {"name": "empty", "type": {"type": "fixed", "name": "t.Empty", "size": 0}},
            {"name": "inner", "type": INNER},
            {"name": "again", "type": ["null", "t.Inner", "t.Colour", "t.Hash"]},
        ],
    },
    "containers": {
        "type": "record",
        "name": "t.Containers",
        "fields": [
            {"name": "longs", "type": {"type": "array", "items": "long"}},
            {"name": "tags", "type": {"type": "map", "values": "string"}},
            {
                "name": "nested",
                "type": {
                    "type": "array",
                    "items": {"type": "map", "values": {"type": "array", "items": "double"}},
                },
            },
            {"name": "records", "type": {"type": "array", "items": INNER}},
            {"name": "nulls", "type": {"type": "array", "items": "null"}},
        ],
    },
    "unions": {
        "type": "record",
        "name": "t.Unions",
        "fields": [
            {"name": "optional", "type": ["null", "string"]},
            {
                "name": "wide",
                "type": [
                    "null",
                    "boolean",
                    "int",
                    "float",
                    "bytes",
                    "string",
                    {"type": "array", "items": "int"},
                    {"type": "map", "values": "long"},
                    COLOUR,
                ],
            },
            {"name": "number", "type": ["long", "double"]},
        ],
    },
    "linked_list": {
        "type": "record",
        "name": "t.Node",
        "fields": [{"name": "value", "type": "int"}, {"name": "next", "type": ["null", "t.Node"]}],
    },
    "tree": {
        "type": "record",
        "name": "t.Tree",
        "fields": [
            {"name": "label", "type": "string"},
            {"name": "children", "type": {"type": "array", "items": "t.Tree"}},
        ],
    },
    "mutual": {
        "type": "record",
        "name": "t.A",
        "fields": [
            {
                "name": "b",
                "type": {
                    "type": "record",
                    "name": "t.B",
                    "fields": [
                        {"name": "a", "type": ["null", "t.A"]},
                        {"name": "x", "type": "float"},
                    ],
                },
            },
            {"name": "more", "type": {"type": "map", "values": "t.B"}},
        ],
    },
}


@functools.cache
def hand_made(name: str) -> tuple[Decoder, Any, str]:
    schema = HAND_MADE[name]
    pcf = to_parsing_canonical_form(schema)
    return Decoder(pcf), fastavro.parse_schema(schema), pcf


# -- building bodies by hand ----------------------------------------------------------------------


def zz(n: int) -> bytes:
    """The zigzag varint of ``n``."""
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        if u < 0x80:
            return bytes(out + bytes([u]))
        out.append((u & 0x7F) | 0x80)
        u >>= 7


def s(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return zz(len(raw)) + raw


def real_messages(per_schema: int = 3) -> list[tuple[SchemaVersion, bytes]]:
    """(schema version, body) of a few random records of every catalogue version."""
    out = []
    for v in VERSIONS:
        gen = RandomValues(v.canonical_form, seed=len(out))
        out += [(v, encode(v.codec_schema, gen.record())) for _ in range(per_schema)]
    return out


# -- parity on valid records ----------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.label)
def test_random_records_of_every_catalogue_schema(version: SchemaVersion) -> None:
    decoder = Decoder(version.canonical_form)
    prefix = header(version.fingerprint)
    gen = RandomValues(version.canonical_form, seed=version.version)
    for _ in range(300):
        body = encode(version.codec_schema, gen.record())
        expected = fastavro.schemaless_reader(BytesIO(body), version.codec_schema, None)
        assert_same(decoder.decode(prefix + body, HEADER_SIZE), expected)
    assert decoder.name == version.full_name


def test_the_load_generators_transactions_and_logins() -> None:
    by_type = encoders()
    decoders = {t: Decoder(e.schema.canonical_form) for t, e in by_type.items()}
    config = StreamConfig(start_time_ms=1_790_000_000_000, count=3000, seed=11)
    seen = set()
    for item in valid_records(config):
        message = by_type[item.record_type].encode(item.record)
        schema = by_type[item.record_type].schema.codec_schema
        expected = fastavro.schemaless_reader(BytesIO(message[HEADER_SIZE:]), schema, None)
        assert_same(decoders[item.record_type].decode(message, HEADER_SIZE), expected)
        seen.add(item.record_type)
    assert seen == set(by_type)


def test_it_agrees_with_the_projects_deserializer() -> None:
    """Same records as AvroDeserializer.decode, which the detector runtime calls today."""
    version = CATALOGUE.get("transaction")
    decoder, deserializer = Decoder(version.canonical_form), AvroDeserializer("transaction")
    gen = RandomValues(version.canonical_form, seed=3)
    for _ in range(200):
        message = header(version.fingerprint) + encode(version.codec_schema, gen.record())
        assert_same(decoder.decode(message, HEADER_SIZE), deserializer.decode(message))


@pytest.mark.parametrize("name", HAND_MADE)
def test_random_records_of_hand_made_schemas(name: str) -> None:
    decoder, codec, pcf = hand_made(name)
    gen = RandomValues(pcf, seed=len(name))
    for _ in range(300):
        body = encode(codec, gen.record())
        assert_same(decoder.decode(body, 0), fastavro.schemaless_reader(BytesIO(body), codec, None))


def test_negative_block_counts_and_several_blocks() -> None:
    """fastavro never writes them, but the spec allows them: a count < 0 is followed by a size."""
    decoder, codec, _ = hand_made("containers")
    longs = zz(-2) + zz(2) + zz(7) + zz(-300) + zz(1) + zz(5) + zz(0)
    tags = zz(-1) + zz(5) + s("k") + s("v") + zz(2) + s("é") + s("1") + s("k") + s("last") + zz(0)
    one = b"\x00" * 6 + b"\xf0\x3f"  # 1.0, little-endian
    nested = zz(1) + zz(-1) + zz(99) + s("m") + zz(-1) + zz(8) + one + zz(0)
    nested += zz(0) + zz(0)
    records = zz(-2) + zz(0) + zz(1) + zz(2) + zz(0)
    nulls = zz(-3) + zz(0) + zz(0)
    body = longs + tags + nested + records + nulls
    expected = fastavro.schemaless_reader(BytesIO(body), codec, None)
    assert expected["longs"] == [7, -300, 5]
    assert expected["tags"] == {"k": "last", "é": "1"}  # a repeated key keeps its last value
    assert expected["nulls"] == [None, None, None]
    assert_same(decoder.decode(body, 0), expected)


def test_a_deep_linked_list_and_a_tree() -> None:
    decoder, codec, _ = hand_made("linked_list")
    body = (zz(1) + zz(1)) * 500 + zz(7) + zz(0)
    record = decoder.decode(body, 0)
    assert_same(record, fastavro.schemaless_reader(BytesIO(body), codec, None))
    assert record["value"] == 1 and record["next"]["next"]["value"] == 1
    decoder, codec, _ = hand_made("tree")
    leaf = s("leaf") + zz(0)
    body = s("root") + zz(2) + leaf + s("mid") + zz(-1) + zz(len(leaf)) + leaf + zz(0) + zz(0)
    assert_same(decoder.decode(body, 0), fastavro.schemaless_reader(BytesIO(body), codec, None))


# -- corrupt messages ------------------------------------------------------------------------------


def test_every_truncation_of_real_messages_is_refused() -> None:
    for version, body in real_messages():
        decoder, prefix = Decoder(version.canonical_form), header(version.fingerprint)
        for end in range(len(body)):
            with pytest.raises(DecodeFailure, match=r"(truncated|too large) .*at byte \d+"):
                decoder.decode(prefix + body[:end], HEADER_SIZE)
            with pytest.raises(Exception):  # noqa: B017 - fastavro raises various types
                reference_decode(body[:end], version.codec_schema)


def test_random_byte_flips_follow_the_parity_rule() -> None:
    rng = random.Random(5)
    outcomes: dict[str, int] = {}
    for version, body in real_messages(per_schema=8):
        decoder, prefix = Decoder(version.canonical_form), header(version.fingerprint)
        for _ in range(40):
            flipped = bytearray(body)
            for _ in range(rng.choice([1, 1, 2, 3])):
                flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            outcome = check_parity(decoder, version.codec_schema, bytes(flipped), prefix)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    # The rule was exercised both ways, not only on messages everybody refuses.
    assert outcomes.get("both refused", 0) > 100 and outcomes.get("same record", 0) > 100


@settings(max_examples=400, deadline=None, database=None)
@given(
    st.sampled_from(["primitives", "named", "unions", "linked_list", "mutual"]),
    st.binary(max_size=80),
)
def test_arbitrary_bytes_follow_the_parity_rule(name: str, body: bytes) -> None:
    decoder, codec, _ = hand_made(name)
    check_parity(decoder, codec, body, b"")


def test_arbitrary_bytes_as_a_transaction_follow_the_parity_rule() -> None:
    version = CATALOGUE.get("transaction")
    decoder = Decoder(version.canonical_form)
    rng = random.Random(9)
    for _ in range(3000):
        body = rng.randbytes(rng.randrange(120))
        check_parity(decoder, version.codec_schema, body, b"")


def test_bytes_left_after_the_record() -> None:
    version = CATALOGUE.get("transaction")
    deserializer = AvroDeserializer("transaction")
    message = header(version.fingerprint) + encode(
        version.codec_schema, RandomValues(version.canonical_form, 1).record()
    )
    for junk in (b"\x00", b"\x02abc"):
        with pytest.raises(DecodeError):
            deserializer.decode(message + junk)
        with pytest.raises(DecodeFailure, match=rf"{len(junk)} unexpected byte\(s\) after"):
            Decoder(version.canonical_form).decode(message + junk, HEADER_SIZE)


LENGTHS = {
    "type": "record",
    "name": "t.Lengths",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "text", "type": "string"},
        {"name": "blob", "type": "bytes"},
        {"name": "tags", "type": {"type": "map", "values": "string"}},
    ],
}
_ID = s("a")
_TEXT = _ID + s("b")
_BLOB = _TEXT + s(b"")
LENGTH_CASES = {
    "negative string length": (_ID + zz(-3) + b"abc", r"negative string length -3 in field text"),
    "huge string length": (_ID + zz(2**62) + b"abc", r"truncated string in field text"),
    "string beyond the end": (
        _ID + zz(4) + b"abc",
        r"truncated string .*\(needs 4 bytes, 3 left\)",
    ),
    "negative bytes length": (_TEXT + zz(-1), r"negative bytes length -1 in field blob"),
    "huge bytes length": (_TEXT + zz(2**63 - 1), r"truncated bytes in field blob"),
    "varint of 11 bytes": (_TEXT + b"\x80" * 10 + b"\x01", r"bytes overflows 64 bits"),
    "huge map count": (_BLOB + zz(2**62) + s("k"), r"map block count \d+ too large in field tags"),
    "map count -2**63": (_BLOB + zz(-(2**63)), r"truncated block byte size in field tags"),
    "negative map key length": (_BLOB + zz(1) + zz(-2) + b"xyz", r"negative map key length -2"),
}


@pytest.mark.parametrize("case", LENGTH_CASES)
def test_bad_lengths_are_refused_before_anything_is_allocated(case: str) -> None:
    body, message = LENGTH_CASES[case]
    with pytest.raises(DecodeFailure, match=message):
        Decoder(to_parsing_canonical_form(LENGTHS)).decode(body, 0)
    with pytest.raises(Exception):  # noqa: B017 - fastavro raises various types
        reference_decode(body, fastavro.parse_schema(LENGTHS))


BAD_UTF8 = {
    "invalid start byte": b"ab\xffc",
    "overlong encoding": b"\xc0\x80",
    "surrogate": b"x\xed\xa0\x80",
    "cut multi-byte": b"\xe4\xb8",
    "above U+10FFFF": b"\xf4\x90\x80\x80",
}


@pytest.mark.parametrize("raw", BAD_UTF8.values(), ids=BAD_UTF8.keys())
def test_bad_utf8_is_refused_in_strings_and_map_keys(raw: bytes) -> None:
    decoder, codec, _ = hand_made("containers")
    in_key = zz(0) + zz(1) + s(raw) + s("v") + zz(0) + zz(0) + zz(0) + zz(0)
    in_value = zz(0) + zz(1) + s("k") + s(raw) + zz(0) + zz(0) + zz(0) + zz(0)
    for body in (in_key, in_value):
        with pytest.raises(DecodeFailure, match=r"invalid UTF-8 in (map key|string) in field tags"):
            decoder.decode(body, 0)
        with pytest.raises(UnicodeDecodeError):
            fastavro.schemaless_reader(BytesIO(body), codec, None)


def test_bad_union_and_enum_indexes() -> None:
    decoder, _, _ = hand_made("named")
    after_colour = b"abcd" + zz(5) + zz(0)  # hash, empty, inner.n, again = null
    cases = {
        zz(3)
        + after_colour: r"bad enum index 3 in field colour at byte 0 \(t\.Colour has 3 symbols",
        zz(0)
        + after_colour[:-1]
        + zz(4): r"bad union index 4 in field again at byte 6 .*4 branches",
        zz(-1) + after_colour: r"bad enum index -1",
        zz(0) + after_colour[:-1] + zz(-1): r"bad union index -1",
    }
    for body, message in cases.items():
        with pytest.raises(DecodeFailure, match=message):
            decoder.decode(body, 0)


def test_messages_name_the_field_and_the_offset() -> None:
    version = CATALOGUE.get("transaction")
    record = RandomValues(version.canonical_form, 2).record()
    record.update(record_id="txn_1", customer_id="cus_42")
    message = header(version.fingerprint) + encode(version.codec_schema, record)
    customer_at = HEADER_SIZE + len(s("txn_1"))  # customer_id comes right after record_id
    with pytest.raises(DecodeFailure) as info:
        Decoder(version.canonical_form).decode(message[: customer_at + 1], HEADER_SIZE)
    assert re.fullmatch(
        rf"truncated string in field customer_id at byte {customer_at}( .*)?", str(info.value)
    )
    assert isinstance(info.value, ValueError)


def test_nesting_and_zero_size_items_are_capped() -> None:
    """Beyond fastavro (which crashes on ~5000 levels): bounded stack, bounded list."""
    decoder, _, _ = hand_made("linked_list")
    with pytest.raises(DecodeFailure, match=r"nested deeper than 1000 levels in field next\.next"):
        decoder.decode((zz(1) + zz(1)) * 100_000 + zz(0) + zz(0), 0)
    decoder, _, _ = hand_made("containers")
    nulls = zz(0) + zz(0) + zz(0) + zz(0) + zz(2**40) + zz(0)
    with pytest.raises(DecodeFailure, match=r"array of more than \d+ items that take no bytes"):
        decoder.decode(nulls, 0)


def test_start_outside_the_message() -> None:
    decoder = Decoder(CATALOGUE.get("login").canonical_form)
    with pytest.raises(DecodeFailure, match="should start at byte 10 but the message has 4 bytes"):
        decoder.decode(b"\xc3\x01ab", 10)
    with pytest.raises(ValueError, match="start must be >= 0"):
        decoder.decode(b"\x00", -1)


# -- schemas it refuses ----------------------------------------------------------------------------

BAD_SCHEMAS = {
    "not JSON": ("{", "not valid JSON"),
    "not a record": ('"string"', "top-level type must be a record"),
    "the .avsc instead of the canonical form": (
        CATALOGUE.get("transaction").text,
        "not the Parsing Canonical Form",
    ),
    "unknown reference": (
        '{"name":"R","type":"record","fields":[{"name":"x","type":"t.Missing"}]}',
        'field x of R: unknown type "t.Missing"',
    ),
    "duplicate union branch": (
        '{"name":"R","type":"record","fields":[{"name":"x","type":["null","null"]}]}',
        "two branches of type null",
    ),
    "bad fixed size": (
        '{"name":"R","type":"record","fields":[{"name":"x","type":{"name":"F","type":"fixed"}}]}',
        "size",
    ),
}


@pytest.mark.parametrize("case", BAD_SCHEMAS)
def test_unusable_schemas_raise_a_one_line_value_error(case: str) -> None:
    text, message = BAD_SCHEMAS[case]
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        Decoder(text)
    assert "\n" not in str(info.value) and not isinstance(info.value, DecodeFailure)


def test_field_order_and_reuse() -> None:
    """Keys come in field order, and one Decoder serves any number of messages."""
    version = CATALOGUE.get("transaction")
    decoder = Decoder(version.canonical_form)
    gen = RandomValues(version.canonical_form, 4)
    names = [f["name"] for f in version.codec_schema["fields"]]
    for record in itertools.islice(iter(gen.record, None), 50):
        assert list(decoder.decode(encode(version.codec_schema, record), 0)) == names
    assert repr(decoder) == "Decoder(mesh.Transaction)"
