"""Typed access to a raw record's JSON fields as Spark columns, for rules and routing.

classify() reads every field of every registered type once per row, into columns:
``_type__<field>`` (its JSON type, as ``schema_of_variant`` names it) and ``_value__<field>`` (its
value as the schema's Spark type). The checks and rules then refer to those columns, so a field
is extracted once however many checks use it (a CASE branch is not covered by Spark's
common-subexpression elimination).

Two ways to read a field, one fast and one exact:

* **fast**: ``from_json`` with the types of every field (one Jackson pass, no per-value objects).
  It is strict for numbers and booleans (a string ``"5"`` for a long is NULL), but lenient for
  strings: a number, boolean, object or array in a string field comes back as its JSON text.
* **exact**: the parsed VARIANT, ``schema_of_variant(variant_get(...))`` for the type and
  ``try_variant_get`` for the value. Exact, but Spark 4.1.1 builds and evaluates a ``Cast``
  expression for every value it converts: the largest item of ingest's profile (docs/ingest.md).

A field takes the fast reading when it is certain: a non-NULL value, and for a string field one
that no other JSON type could have produced (not a number, ``true``/``false``, ``{...}`` or
``[...]``). Everything else (absent, null, wrong type, out of range, a numeric-looking string) is
read the exact way, inside a CASE branch that only such rows evaluate, so every check and every
error message is what the exact reading alone would give; tests/integration/test_ingest_fields.py
compares the two on generated and adversarial records.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from services.ingest.record_types import FieldSpec, RecordType

#: The column holding the parsed JSON (a VARIANT) and the batch's ingest time in epoch ms.
JSON = "json"
INGEST_TIME_MS = "ingest_time_ms"
#: The column holding the fast, typed reading of every field (a struct from ``from_json``).
TYPED = "_typed"

#: The JSON text from_json gives a string field that held another JSON type: such a value might
#: have been a string or not, so it is read the exact way.
_NOT_SURELY_A_STRING = r"(?s)^(-?[0-9].*|true|false|[{\[].*)$"
#: The type name a certain fast reading stands for, per Avro type (each passes ``accepted``).
_FAST_TYPE = {"string": "STRING", "long": "BIGINT", "int": "BIGINT", "double": "DOUBLE",
              "float": "DOUBLE", "boolean": "BOOLEAN", "map": "OBJECT"}  # fmt: skip
#: from_json's options: NaN / Infinity only as JSON numbers (which try_parse_json refuses), never
#: from strings such as "NaN".
_FROM_JSON_OPTIONS = {"allowNonNumericNumbers": "false", "mode": "PERMISSIVE"}


def type_column(name: str) -> str:
    return f"_type__{name}"


def value_column(name: str) -> str:
    return f"_value__{name}"


def distinct_fields(specs: Iterable[FieldSpec]) -> dict[str, FieldSpec]:
    """Every field name once; two types giving one name different Spark types is an error."""
    seen: dict[str, FieldSpec] = {}
    for spec in specs:
        previous = seen.setdefault(spec.name, spec)
        if previous.spark_type != spec.spark_type:
            raise ValueError(
                f"field {spec.name} has type {previous.spark_type} in one record type and "
                f"{spec.spark_type} in another: rename one"
            )
    return seen


def typed_reading(text: Column, specs: Iterable[FieldSpec]) -> Column:
    """The fast reading of every field at once: a struct, NULL fields where it cannot tell."""
    schema = ", ".join(f"`{n}` {s.spark_type}" for n, s in distinct_fields(specs).items())
    return F.from_json(text, schema, _FROM_JSON_OPTIONS)


def extraction_columns(specs: Iterable[FieldSpec], exact_only: bool = False) -> list[Column]:
    """One JSON-type column and one typed-value column per distinct field name (needs the
    ``JSON`` and ``TYPED`` columns). ``exact_only`` reads every field the exact way: the
    reference the fast reading is tested against."""
    columns = []
    for name, spec in distinct_fields(specs).items():
        fast = F.col(TYPED).getField(name)
        certain = fast.isNotNull() & F.lit(not exact_only)
        if spec.avro_type == "string":
            certain = certain & ~fast.rlike(_NOT_SURELY_A_STRING)
        found = F.expr(f"schema_of_variant(variant_get({JSON}, '$.{name}'))")
        value = F.expr(f"try_variant_get({JSON}, '$.{name}', '{spec.spark_type}')")
        columns += [
            F.when(certain, F.lit(_FAST_TYPE[spec.avro_type]))
            .otherwise(found)
            .alias(type_column(name)),
            F.when(certain, fast).otherwise(value).alias(value_column(name)),
        ]
    return columns


class TypedRecord:
    """What a rule's ``check`` receives: the record's fields as typed columns."""

    def __init__(self, record_type: RecordType) -> None:
        self._type = record_type

    def __getattr__(self, name: str) -> Column:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, name: str) -> Column:
        if not any(f.name == name for f in self._type.fields):
            raise KeyError(f"{self._type.name} has no field {name!r}")
        return F.col(value_column(name))

    def trimmed(self, name: str) -> Column:
        return F.trim(self[name])

    @property
    def ingest_time_ms(self) -> Column:
        return F.col(INGEST_TIME_MS)


def avro_struct(record_type: RecordType) -> Column:
    """The validated record as a struct in the field order of its Avro schema."""
    columns: list[Any] = []
    for field in record_type.schema.parsed["fields"]:
        name = field["name"]
        if name == "ingest_time":
            columns.append(F.col(INGEST_TIME_MS).alias(name))
            continue
        spec = record_type.field(name)
        value = F.col(value_column(name))
        if spec.avro_type == "map":
            value = F.coalesce(value, F.create_map().cast(spec.spark_type))
        columns.append(value.alias(name))
    return F.struct(*columns)
