"""Typed access to a raw record's JSON fields as Spark columns, for rules and routing.

classify() reads every field of every registered type out of the parsed JSON (a VARIANT) once per
row, into columns: ``_type__<field>`` (its JSON type, from ``schema_of_variant``) and
``_value__<field>`` (its value as the schema's Spark type). The checks and rules then refer to
those columns, so a field is extracted once however many checks use it (a CASE branch is not
covered by Spark's common-subexpression elimination).
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


def type_column(name: str) -> str:
    return f"_type__{name}"


def value_column(name: str) -> str:
    return f"_value__{name}"


def extraction_columns(specs: Iterable[FieldSpec]) -> list[Column]:
    """One JSON-type column and one typed-value column per distinct field name."""
    seen: dict[str, FieldSpec] = {}
    for spec in specs:
        previous = seen.setdefault(spec.name, spec)
        if previous.spark_type != spec.spark_type:
            raise ValueError(
                f"field {spec.name} has type {previous.spark_type} in one record type and "
                f"{spec.spark_type} in another: rename one"
            )
    columns = []
    for name, spec in seen.items():
        found = F.expr(f"schema_of_variant(variant_get({JSON}, '$.{name}'))")
        value = F.expr(f"try_variant_get({JSON}, '$.{name}', '{spec.spark_type}')")
        columns += [found.alias(type_column(name)), value.alias(value_column(name))]
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
