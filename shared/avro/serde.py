"""Encode records as single-object Avro messages, and decode them with schema resolution.

:class:`AvroSerializer` writes with one schema version (the latest by default).
:class:`AvroDeserializer` reads with one reader schema; the writer schema is whichever catalogue
version the message's fingerprint names, from *any* schema, resolved to the reader schema. That
is what lets v1 and v2 producers and consumers run side by side during a rollout.

Both are confluent-kafka style callables, ``serializer(value, ctx) -> bytes`` and
``deserializer(value, ctx) -> record``, so they plug straight into a producer or consumer loop;
``ctx`` (a ``SerializationContext`` or None) is only used to name the topic in error notes.

Everything that can be computed before the first record is: schemas are parsed once by the
catalogue, the 10-byte header is prebuilt, and the deserializer decides up front, per writer
fingerprint, whether it can resolve it (with :mod:`shared.avro.resolution`) and with which
pair of schemas. Per message that leaves one dict lookup and one decoder call: the compiled
decoder (:mod:`shared.avro.compiled`) when the writer is the reader's own version, else fastavro
and a length check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from io import BytesIO
from typing import Any, Literal, overload

from fastavro import schemaless_reader, schemaless_writer
from fastavro.validation import validate

from shared.avro.catalogue import Catalogue, SchemaVersion, load_catalogue
from shared.avro.compiled import CompiledDecode, DecodeFailure, compiled_decoder
from shared.avro.errors import (
    CorruptRecordError,
    DecodeError,
    EncodeError,
    IncompatibleSchemaError,
    UnknownFingerprintError,
)
from shared.avro.resolution import check_compatibility
from shared.avro.single_object import HEADER_SIZE, header, read_fingerprint

#: A decoded record: field name -> value (timestamps as int epoch milliseconds).
Record = dict[str, Any]
#: (writer schema, reader schema or None when they are the same) for fastavro, and the compiled
#: decoder when writer and reader are the same and it is available.
_Plan = tuple[dict[str, Any], dict[str, Any] | None, CompiledDecode | None]


class AvroSerializer:
    """Encode records of schema ``name`` (version ``version``, default latest) as messages.

    With ``strict`` (the default) a record with a field the schema does not have, or without a
    field that has no default, is refused: such a record is almost always a typo in the
    producer, and silently dropping or defaulting it would corrupt data downstream.
    """

    __slots__ = ("_header", "_numeric", "_schema", "_strict", "schema")

    def __init__(
        self,
        name: str,
        version: int | None = None,
        *,
        catalogue: Catalogue | None = None,
        strict: bool = True,
    ) -> None:
        self.schema: SchemaVersion = (catalogue or load_catalogue()).get(name, version)
        self._schema = self.schema.codec_schema
        self._header = header(self.schema.fingerprint)
        self._strict = strict
        self._numeric = _numeric_fields(self._schema)

    def encode(self, record: Mapping[str, Any]) -> bytes:
        """The single-object message for ``record``; raises :class:`EncodeError`."""
        out = BytesIO()
        out.write(self._header)
        try:
            if self._strict:
                for name, classes in self._numeric:
                    if record.get(name).__class__ not in classes:
                        raise TypeError(f"field {name} has the wrong type")
            schemaless_writer(out, self._schema, record, strict_allow_default=self._strict)
        except Exception as exc:  # fastavro raises TypeError, ValueError, KeyError, ...
            raise EncodeError(self._explain(record, exc)) from exc
        return out.getvalue()

    @overload
    def __call__(self, value: Mapping[str, Any], ctx: Any = None) -> bytes: ...

    @overload
    def __call__(self, value: None, ctx: Any = None) -> None: ...

    def __call__(self, value: Mapping[str, Any] | None, ctx: Any = None) -> bytes | None:
        """confluent-kafka ``Serializer`` protocol; None (a tombstone) stays None."""
        if value is None:
            return None
        try:
            return self.encode(value)
        except EncodeError as exc:
            _note_topic(exc, ctx)
            raise

    def _explain(self, record: Mapping[str, Any], exc: Exception) -> str:
        """Say which field is wrong and how, without quoting values (they may be sensitive)."""
        return (
            f"record does not fit {self.schema.label} ({self.schema.full_name}): "
            + _what_is_wrong(self._schema, record, self._strict, exc)
        )


class AvroDeserializer:
    """Decode messages into records of reader schema ``name`` (version ``version``, default latest).

    Every failure is a :class:`DecodeError` subclass carrying the reason, never a silent drop:
    :class:`NotSingleObjectError`, :class:`UnknownFingerprintError`,
    :class:`IncompatibleSchemaError` or :class:`CorruptRecordError`.
    """

    __slots__ = ("_catalogue", "_plans", "_refused", "schema")

    def __init__(
        self, name: str, version: int | None = None, *, catalogue: Catalogue | None = None
    ) -> None:
        catalogue = catalogue or load_catalogue()
        reader = catalogue.get(name, version)
        self.schema: SchemaVersion = reader
        self._plans: dict[bytes, _Plan] = {}
        self._refused: dict[bytes, IncompatibleSchemaError] = {}
        self._catalogue = catalogue
        for writer in catalogue:
            if writer.fingerprint == reader.fingerprint:
                compiled = compiled_decoder(writer.canonical_form)
                self._plans[writer.fingerprint] = (writer.codec_schema, None, compiled)
                continue
            problems = check_compatibility(reader.parsed, writer.parsed, root=reader.name)
            if problems:
                self._refused[writer.fingerprint] = IncompatibleSchemaError(
                    f"{writer.label} ({writer.full_name})",
                    f"{reader.label} ({reader.full_name})",
                    problems,
                )
            else:
                self._plans[writer.fingerprint] = (writer.codec_schema, reader.codec_schema, None)

    def decode(self, message: bytes) -> Record:
        """The record in ``message``, resolved to the reader schema; raises DecodeError."""
        fingerprint = read_fingerprint(message)
        plan = self._plans.get(fingerprint)
        if plan is None:
            raise self._no_plan(fingerprint)
        compiled = plan[2]
        if compiled is not None and message.__class__ is bytes:
            try:
                return compiled(message, HEADER_SIZE)
            except DecodeFailure as exc:
                raise CorruptRecordError(
                    f"undecodable {self._writer_label(fingerprint)} body "
                    f"({len(message) - HEADER_SIZE} bytes): {exc}"
                ) from exc
        body = BytesIO(message)
        body.seek(HEADER_SIZE)
        try:
            record: Record = schemaless_reader(body, plan[0], plan[1])  # type: ignore[assignment]
        except Exception as exc:  # EOFError, UnicodeDecodeError, ValueError, ... from fastavro
            raise CorruptRecordError(
                f"undecodable {self._writer_label(fingerprint)} body "
                f"({len(message) - HEADER_SIZE} bytes): {type(exc).__name__}: {exc}"
            ) from exc
        end = body.tell()
        if end != len(message):
            raise CorruptRecordError(
                f"{len(message) - end} unexpected byte(s) after the "
                f"{self._writer_label(fingerprint)} record (message of {len(message)} bytes); "
                "the message is corrupt or was framed wrongly"
            )
        return record

    @overload
    def decode_many(
        self, messages: Iterable[bytes], return_errors: Literal[False] = False
    ) -> list[Record]: ...

    @overload
    def decode_many(
        self, messages: Iterable[bytes], return_errors: Literal[True]
    ) -> list[Record | DecodeError]: ...

    def decode_many(
        self, messages: Iterable[bytes], return_errors: bool = False
    ) -> list[Record] | list[Record | DecodeError]:
        """Decode a batch, in order.

        With ``return_errors`` a message that fails yields its :class:`DecodeError` in its slot
        (like ``asyncio.gather``), so the caller can dead-letter exactly that message and keep
        the others; otherwise the first failure is raised.
        """
        decode = self.decode
        if not return_errors:
            return [decode(m) for m in messages]
        out: list[Record | DecodeError] = []
        append = out.append
        for message in messages:
            try:
                append(decode(message))
            except DecodeError as exc:
                append(exc)
        return out

    @overload
    def __call__(self, value: bytes, ctx: Any = None) -> Record: ...

    @overload
    def __call__(self, value: None, ctx: Any = None) -> None: ...

    def __call__(self, value: bytes | None, ctx: Any = None) -> Record | None:
        """confluent-kafka ``Deserializer`` protocol; None (a tombstone) stays None."""
        if value is None:
            return None
        try:
            return self.decode(value)
        except DecodeError as exc:
            _note_topic(exc, ctx)
            raise

    def _no_plan(self, fingerprint: bytes) -> DecodeError:
        refused = self._refused.get(fingerprint)
        if refused is not None:
            # A fresh instance per message: exceptions carry tracebacks and notes.
            return IncompatibleSchemaError(refused.writer, refused.reader, refused.problems)
        return UnknownFingerprintError(fingerprint, len(self._catalogue))

    def _writer_label(self, fingerprint: bytes) -> str:
        writer = self._catalogue.by_fingerprint(fingerprint)
        return writer.label if writer is not None else fingerprint.hex()


def _numeric_fields(schema: dict[str, Any]) -> tuple[tuple[str, tuple[type, ...]], ...]:
    """(field, accepted Python classes) of the record's plain numeric fields.

    fastavro writes ``float(value)`` for a float/double field and truncates a float written to
    an int/long field, so ``"12.50"``, ``True`` or epoch seconds as ``1763800000.5`` would be
    stored silently altered. Strict encoding checks these fields itself, cheaply (a full
    fastavro validation costs eight times the encoding). Unions need no check: fastavro picks
    the branch by the value's type and refuses a value no branch accepts.
    """
    accepted = {"float": (float, int), "double": (float, int), "int": (int,), "long": (int,)}
    checks = []
    for f in schema["fields"]:
        ftype = f["type"]
        if isinstance(ftype, dict):
            ftype = ftype.get("type")
        if isinstance(ftype, str) and ftype in accepted:
            checks.append((f["name"], accepted[ftype]))
    return tuple(checks)


def _what_is_wrong(
    schema: dict[str, Any], record: Mapping[str, Any], strict: bool, exc: Exception
) -> str:
    """The first problem of ``record`` against a record ``schema``, or fastavro's own message.

    Only runs after an encode failed, so it may be slow; fastavro's messages do not always name
    the field, and its validator quotes the whole record and schema, values included.
    """
    if not isinstance(record, Mapping):
        return f"a record must be a mapping of field names to values, got {type(record).__name__}"
    fields = schema["fields"]
    unknown = sorted(set(record) - {f["name"] for f in fields})
    if strict and unknown:
        return f"unknown field(s) {', '.join(map(str, unknown))} (a typo, or the wrong schema?)"
    missing = [f["name"] for f in fields if f["name"] not in record and "default" not in f]
    if missing:
        return f"missing required field(s) {', '.join(missing)}"
    named = schema.get("__named_schemas", {})
    for f in fields:
        if f["name"] not in record:
            continue
        value, ftype = record[f["name"]], f["type"]
        ftype = named.get(ftype, ftype) if isinstance(ftype, str) else ftype
        plain = ftype.get("type") if isinstance(ftype, dict) else ftype
        if plain in ("int", "long"):
            bits = 32 if plain == "int" else 64
            fits = value.__class__ is int and -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
        elif plain in ("float", "double"):
            fits = value.__class__ in (float, int)
        else:
            try:
                fits = validate(value, ftype, raise_errors=False)
            except Exception:  # a type fastavro cannot validate on its own (nested reference)
                continue
        if not fits:
            got = type(value).__name__
            if value.__class__ is int and plain in ("int", "long"):
                got = f"an int outside the {plain} range"
            return f"field {f['name']}: expected {_type_name(ftype)}, got {got}"
    return f"{type(exc).__name__}: {exc}"


def _type_name(schema: Any) -> str:
    if isinstance(schema, list):
        return " or ".join(_type_name(s) for s in schema)
    if isinstance(schema, dict):
        return str(schema.get("name") or _type_name(schema["type"]))
    return str(schema)


def _note_topic(exc: Exception, ctx: Any) -> None:
    topic = getattr(ctx, "topic", None)
    if topic:
        exc.add_note(f"topic: {topic}")
