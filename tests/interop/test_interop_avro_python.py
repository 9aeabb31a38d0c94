"""Interop with the Apache reference Python library ``avro``.

Both directions, for every schema version: what the project writes, ``avro`` reads (framing
checked by hand, fingerprint compared with the one ``avro`` computes, body decoded with its
``DatumReader``), and what ``avro``'s ``DatumWriter`` writes, framed with ``avro``'s fingerprint,
the project reads. Also cross-version resolution, with ``avro`` as the resolver.

One deviation of ``avro`` 1.12.2 from the specification is pinned down here: its Parsing
Canonical Form keeps ``{"type": "long"}`` for a logical-type annotated ``long`` where the
specification's [PRIMITIVES] and [STRIP] rules (and the Java library, and fastavro) give
``"long"``. So its ``fingerprint()`` of a schema with timestamps differs from the one every
other implementation puts on the wire; the fingerprints below come from ``avro`` parsing the
schema without its logical-type annotations, which is the same canonical form by definition.
The Java interop test checks the project's fingerprints with the annotations in place.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import avro.io
import avro.schema
import pytest

from shared.avro import AvroDeserializer, AvroSerializer, SchemaVersion, load_catalogue
from shared.avro.catalogue import fingerprint, without_logical_types
from testkit.avro_examples import examples

CATALOGUE = load_catalogue()
VERSIONS = list(CATALOGUE)
PAIRS = [pair for name in CATALOGUE.names() for pair in pairwise(CATALOGUE.versions(name))]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MILLISECOND = timedelta(milliseconds=1)


def _ids(sv: SchemaVersion) -> str:
    return f"{sv.name}-v{sv.version}"


def _reference(sv: SchemaVersion) -> avro.schema.Schema:
    return avro.schema.parse(sv.text)


def _reference_fingerprint(sv: SchemaVersion) -> bytes:
    """``avro``'s fingerprint of the schema, minus the annotations it mishandles (see above)."""
    plain = avro.schema.parse(json.dumps(without_logical_types(json.loads(sv.text))))
    fp = plain.fingerprint("CRC-64-AVRO")
    assert isinstance(fp, bytes)
    return fp


def to_reference(value: Any, schema: avro.schema.Schema) -> Any:
    """The project's representation -> the avro library's (epoch ms -> aware datetime)."""
    if isinstance(schema, avro.schema.TimestampMillisSchema):
        return EPOCH + value * MILLISECOND
    if isinstance(schema, avro.schema.RecordSchema):
        return {f.name: to_reference(value[f.name], f.type) for f in schema.fields}
    if isinstance(schema, avro.schema.UnionSchema):
        if value is None:
            return None
        [branch] = [s for s in schema.schemas if s.type != "null"]
        return to_reference(value, branch)
    if isinstance(schema, avro.schema.ArraySchema):
        return [to_reference(v, schema.items) for v in value]
    if isinstance(schema, avro.schema.MapSchema):
        return {k: to_reference(v, schema.values) for k, v in value.items()}
    return value


def from_reference(value: Any) -> Any:
    """The avro library's representation -> the project's (aware datetime -> epoch ms)."""
    if isinstance(value, datetime):
        return (value - EPOCH) // MILLISECOND
    if isinstance(value, dict):
        return {k: from_reference(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_reference(v) for v in value]
    return value


def _reference_read(body: bytes, writer: avro.schema.Schema, reader: avro.schema.Schema) -> Any:
    stream = io.BytesIO(body)
    record = avro.io.DatumReader(writer, reader).read(avro.io.BinaryDecoder(stream))
    assert stream.tell() == len(body), "avro left bytes unread: the body is longer than the record"
    return from_reference(record)


def _reference_write(record: dict[str, Any], schema: avro.schema.Schema) -> bytes:
    stream = io.BytesIO()
    avro.io.DatumWriter(schema).write(to_reference(record, schema), avro.io.BinaryEncoder(stream))
    return stream.getvalue()


@pytest.mark.parametrize("sv", VERSIONS, ids=_ids)
def test_fingerprint_and_canonical_form_match_the_reference(sv: SchemaVersion) -> None:
    plain = avro.schema.parse(json.dumps(without_logical_types(json.loads(sv.text))))
    assert plain.canonical_form == sv.canonical_form
    assert _reference_fingerprint(sv) == sv.fingerprint


@pytest.mark.xfail(
    strict=True,
    reason='avro (Python) 1.12.2 keeps {"type": "long"} for logical types in the Parsing '
    'Canonical Form; the specification, Java and fastavro give "long". When this passes, the '
    "reference library is fixed: drop this marker and _reference_fingerprint's workaround.",
)
def test_reference_canonical_form_strips_logical_types() -> None:
    schema = {"type": "long", "logicalType": "timestamp-millis"}
    reference = avro.schema.parse(json.dumps(schema))
    assert reference.canonical_form == '"long"'
    assert reference.fingerprint("CRC-64-AVRO") == fingerprint(schema) == fingerprint("long")


@pytest.mark.parametrize("sv", VERSIONS, ids=_ids)
def test_reference_reads_what_the_project_writes(sv: SchemaVersion) -> None:
    schema = _reference(sv)
    encode = AvroSerializer(sv.name, sv.version)
    for record in examples(sv.name, sv.version):
        message = encode.encode(record)
        assert message[:2] == b"\xc3\x01"
        assert message[2:10] == _reference_fingerprint(sv)
        assert _reference_read(message[10:], schema, schema) == record


@pytest.mark.parametrize("sv", VERSIONS, ids=_ids)
def test_project_reads_what_the_reference_writes(sv: SchemaVersion) -> None:
    schema = _reference(sv)
    header = b"\xc3\x01" + _reference_fingerprint(sv)
    decode = AvroDeserializer(sv.name, sv.version)
    for record in examples(sv.name, sv.version):
        assert decode.decode(header + _reference_write(record, schema)) == record


@pytest.mark.parametrize(
    "pair", PAIRS, ids=lambda p: f"{p[0].name}-v{p[0].version}-v{p[1].version}"
)
def test_reference_and_project_resolve_versions_alike(
    pair: tuple[SchemaVersion, SchemaVersion],
) -> None:
    old, new = pair
    for writer, reader in ((old, new), (new, old)):
        encode = AvroSerializer(writer.name, writer.version)
        decode = AvroDeserializer(reader.name, reader.version)
        for record in examples(writer.name, writer.version):
            message = encode.encode(record)
            by_reference = _reference_read(message[10:], _reference(writer), _reference(reader))
            assert decode.decode(message) == by_reference
