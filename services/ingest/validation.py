"""classify(): give every raw Kafka row exactly one outcome — valid, or one error code.

Checks run in a fixed order and the first failure names the error, so every invalid record gets
one stable code (EMPTY, OVERSIZED, NOT_UTF8, UNKNOWN_TYPE, NOT_JSON, NOT_OBJECT, MISSING_FIELD,
WRONG_TYPE, then the business rules of rules.py). Everything is a Spark column expression.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from services.ingest.record_types import RecordType, record_type
from services.ingest.rules import RECORD_TYPES, Rule
from services.ingest.typed_fields import (
    INGEST_TIME_MS,
    JSON,
    TYPED,
    TypedRecord,
    extraction_columns,
    type_column,
    typed_reading,
    value_column,
)
from shared.avro.catalogue import Catalogue

#: Column names classify() adds.
RECORD_TYPE = "record_type"
ERROR = "error"  # struct<code, field, message>; NULL for a valid record


@dataclass(frozen=True)
class CheckedType:
    """A record type with the rules it is checked against."""

    record_type: RecordType
    rules: tuple[Rule, ...]


def checked_types(catalogue: Catalogue) -> dict[str, CheckedType]:
    """Every registered raw type, its latest schema and its rules."""
    return {
        name: CheckedType(record_type(name, spec.schema, catalogue), spec.rules)
        for name, spec in RECORD_TYPES.items()
    }


def _error(code: str, message: Column | str, field: str | None = None) -> Column:
    text = message if isinstance(message, Column) else F.lit(message)
    return F.struct(
        F.lit(code).alias("code"), F.lit(field).cast("string").alias("field"), text.alias("message")
    )


def _now_ms() -> Column:
    """The wall clock when the row is validated, in epoch ms. Not ``current_timestamp()``: Spark
    fixes that once per batch, and a real-time batch lasts a whole checkpoint interval, so the
    future-event-time rule and ``ingest_time`` would drift by up to that much."""
    return F.expr("cast(java_method('java.lang.System', 'currentTimeMillis') as bigint)")


def classify(
    raw: DataFrame,
    types: dict[str, CheckedType],
    max_record_bytes: int,
    exact_only: bool = False,
) -> DataFrame:
    """Add ``record_type``, ``json`` (VARIANT), ``ingest_time_ms`` and ``error`` to Kafka rows.
    ``exact_only``: read fields only the exact way (typed_fields.py), the tests' reference."""
    size = F.length("value")
    usable = (size > 0) & (size <= max_record_bytes) & F.expr("is_valid_utf8(value)")
    text = F.col("value").cast("string")
    # parse_json accepts trailing text after a complete object or array ('{"a":1} junk'): a text
    # that opens one must also close it.
    opened = F.ltrim(text).substr(1, 1)
    closed = F.rtrim(text).endswith("}") | F.rtrim(text).endswith("]")
    framed = ~opened.isin("{", "[") | closed
    parsed = raw.select(
        "*",
        F.regexp_extract("topic", r"([^.]+)$", 1).alias(RECORD_TYPE),  # raw.<type> -> <type>
        F.when(usable & framed, F.expr("try_parse_json(cast(value as string))")).alias(JSON),
        _now_ms().alias(INGEST_TIME_MS),
    )
    all_fields = [f for checked in types.values() for f in checked.record_type.fields]
    parsed = parsed.select(
        "*", F.when(F.col(JSON).isNotNull(), typed_reading(text, all_fields)).alias(TYPED)
    )
    parsed = parsed.select("*", *extraction_columns(all_fields, exact_only)).drop(TYPED)
    kind = F.col(RECORD_TYPE)
    error = (
        F.when(F.col("value").isNull() | (size == 0), _error("EMPTY", "the record has no value"))
        .when(size > max_record_bytes, _error("OVERSIZED", f"larger than {max_record_bytes} bytes"))
        .when(~F.expr("is_valid_utf8(value)"), _error("NOT_UTF8", "the value is not valid UTF-8"))
        .when(
            ~kind.isin(sorted(types)),
            _error("UNKNOWN_TYPE", F.concat(F.lit("no schema for record type "), kind)),
        )
        .when(
            F.col(JSON).isNull(), _error("NOT_JSON", "the value is not one well-formed JSON text")
        )
        # A well-formed JSON text is an object exactly when it opens with "{".
        .when(opened != "{", _error("NOT_OBJECT", "the JSON value is not an object"))
    )
    for name, checked in types.items():
        error = _type_checks(error, kind == name, checked)
    return parsed.withColumn(ERROR, error.otherwise(F.lit(None)))


def _type_checks(error: Column, is_type: Column, checked: CheckedType) -> Column:
    """Append the schema checks, then the rules, of one record type to the CASE chain."""
    for spec in checked.record_type.fields:
        found = F.col(type_column(spec.name))
        absent = found.isNull() | (found == "VOID")
        if spec.required:
            error = error.when(
                is_type & absent,
                _error(
                    "MISSING_FIELD", f"required field {spec.name} is missing or null", spec.name
                ),
            )
        wrong = ~absent & ~found.rlike(spec.accepted)
        message = F.concat(F.lit(f"field {spec.name} must be {spec.expected}, got "), found)
        error = error.when(is_type & wrong, _error("WRONG_TYPE", message, spec.name))
        if spec.avro_type in {"long", "int"}:  # an integral JSON number too large for the type
            overflow = ~absent & F.col(value_column(spec.name)).isNull()
            error = error.when(
                is_type & overflow,
                _error("WRONG_TYPE", f"field {spec.name} is out of range", spec.name),
            )
    record = TypedRecord(checked.record_type)
    for rule in checked.rules:
        passed = rule.check(record)
        error = error.when(
            is_type & ~F.coalesce(passed, F.lit(False)), _error(rule.code, rule.message, rule.field)
        )
    return error
