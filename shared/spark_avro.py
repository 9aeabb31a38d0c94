"""Avro single-object decoding in the JVM, with the reason when a message cannot be read.

Every Spark job that reads the mesh's Avro topics decodes this way (the metrics aggregator, the
history). ``classify(raw, catalogue, name)`` adds three columns to Kafka source rows:

- ``decoded``: the record as the latest version of schema ``name`` (null when unreadable),
- ``error_class`` / ``error_message``: null for a good message, else why it is a dead letter.

The header (C3 01 + fingerprint) is compared with each version's precomputed 10 bytes; the body
of a known version goes through spark-avro's ``from_avro`` with that version as the writer
schema and the latest as the reader schema (Avro schema resolution, as the Python deserializer
does), in PERMISSIVE mode so an undecodable body gives nulls instead of failing the batch. Only
column expressions: no Python runs per message.

Tombstones (null values: deletes on a compacted topic) are not messages and are dropped here.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from shared.avro.catalogue import Catalogue
from shared.avro.errors import (
    CorruptRecordError,
    IncompatibleSchemaError,
    NotSingleObjectError,
    UnknownFingerprintError,
)
from shared.avro.single_object import FINGERPRINT_SIZE, HEADER_SIZE, MARKER, header

DECODED, ERROR_CLASS, ERROR_MESSAGE = "decoded", "error_class", "error_message"

#: A reason a message is a dead letter: when it applies, the error class, and the message.
Reason = tuple[Column, str, Column]


def class_name(cls: type[BaseException]) -> str:
    """``shared.avro.errors.CorruptRecordError``: what a dead letter's ``mesh.error.class``
    header says, as for every other dead letter of the mesh."""
    return f"{cls.__module__}.{cls.__qualname__}"


NOT_SINGLE_OBJECT = class_name(NotSingleObjectError)
UNKNOWN_FINGERPRINT = class_name(UnknownFingerprintError)
INCOMPATIBLE_SCHEMA = class_name(IncompatibleSchemaError)
CORRUPT_RECORD = class_name(CorruptRecordError)


def classify(
    raw: DataFrame, catalogue: Catalogue, name: str, more_reasons: list[Reason] | None = None
) -> DataFrame:
    """``raw`` Kafka rows (key, value, topic, partition, offset ...) plus decoded and error;
    ``more_reasons`` are a job's own, checked after the Avro ones."""
    versions = catalogue.versions(name)
    reader = versions[-1]
    value = F.col("value")
    head = F.substring(value, 1, HEADER_SIZE)
    raw_fingerprint = F.substring(value, len(MARKER) + 1, FINGERPRINT_SIZE)
    fingerprint = F.lower(F.hex(raw_fingerprint))
    body = F.expr(f"substring(value, {HEADER_SIZE + 1})")

    decoded: list[tuple[Column, Column]] = []
    writers: list[tuple[Column, Column]] = []
    for version in versions:
        options = {"mode": "PERMISSIVE"}
        if version is not reader:
            options["avroSchema"] = reader.text
        is_version = head == F.lit(header(version.fingerprint))
        decoded.append((is_version, from_avro(body, version.text, options)))
        writers.append((is_version, F.lit(version.label)))
    writer = _first_match(writers)
    others = [v for v in catalogue if v.name != name]
    other = _first_match(
        [(raw_fingerprint == F.lit(v.fingerprint), F.lit(v.label)) for v in others]
    )
    not_single_object = F.length(value) < HEADER_SIZE
    not_single_object |= F.substring(value, 1, len(MARKER)) != F.lit(MARKER)
    required = F.col(f"{DECODED}.{_first_field(reader.parsed)}")

    reasons: list[Reason] = [
        (not_single_object, NOT_SINGLE_OBJECT, _not_single_object_message(value)),
        (
            writer.isNull() & other.isNotNull(),
            INCOMPATIBLE_SCHEMA,
            F.concat(F.lit("a "), other, F.lit(" message (fingerprint "), fingerprint,
                     F.lit(f"), not {name}: a producer writes to the wrong topic")),
        ),
        (
            writer.isNull(),
            UNKNOWN_FINGERPRINT,
            F.concat(F.lit("unknown writer schema fingerprint "), fingerprint,
                     F.lit(f"; this aggregator reads {_known(catalogue, name)}: deploy the "
                           "schemas/ folder that has the producer's schema")),
        ),
        (
            F.col(DECODED).isNull() | required.isNull(),
            CORRUPT_RECORD,
            F.concat(F.lit("the body does not decode as "), writer,
                     F.lit(" (truncated, corrupt, or not written with that schema)")),
        ),
    ]  # fmt: skip
    reasons += more_reasons or []
    with_decoded = raw.filter(value.isNotNull()).withColumn(DECODED, _first_match(decoded))
    return with_decoded.withColumn(
        ERROR_CLASS, _first_match([(cond, F.lit(cls)) for cond, cls, _ in reasons])
    ).withColumn(ERROR_MESSAGE, _first_match([(cond, msg) for cond, _, msg in reasons]))


def _first_match(cases: list[tuple[Column, Column]]) -> Column:
    """``CASE WHEN c1 THEN v1 WHEN c2 THEN v2 ... END`` (null when none matches or no case)."""
    if not cases:
        return F.lit(None).cast("string")
    (condition, result), *rest = cases
    chained = F.when(condition, result)
    for condition, result in rest:
        chained = chained.when(condition, result)
    return chained


def valid(classified: DataFrame) -> DataFrame:
    return classified.filter(F.col(ERROR_CLASS).isNull())


def invalid(classified: DataFrame) -> DataFrame:
    return classified.filter(F.col(ERROR_CLASS).isNotNull())


def _first_field(parsed: dict[str, object]) -> str:
    """A required field of the record: null only when the body did not decode."""
    fields = parsed["fields"]
    assert isinstance(fields, list)
    return str(fields[0]["name"])


def _known(catalogue: Catalogue, name: str) -> str:
    return ", ".join(f"{v.label} ({v.fingerprint.hex()})" for v in catalogue.versions(name))


def _not_single_object_message(value: Column) -> Column:
    return F.concat(
        F.lit("not an Avro single-object message: "),
        F.length(value).cast("string"),
        F.lit(" bytes starting with 0x"),
        F.lower(F.hex(F.substring(value, 1, 12))),
        F.lit(", not the marker c301 and a fingerprint; was it produced with the Avro serializer?"),
    )
