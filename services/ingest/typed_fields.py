"""Typed access to a raw record's JSON fields as Spark columns, for rules and routing.

``r.amount`` is ``try_variant_get(json, '$.amount', 'double')``: an expression over the parsed
variant column, evaluated in the JVM. Spark's common-subexpression elimination computes a field
once per row however many rules use it.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from services.ingest.record_types import RecordType

#: The column holding the parsed JSON (a VARIANT) and the batch's ingest time in epoch ms.
JSON = "json"
INGEST_TIME_MS = "ingest_time_ms"


def json_type(name: str) -> Column:
    """The JSON type of field ``name`` (BIGINT, STRING, VOID for null ...; NULL when absent)."""
    return F.expr(f"schema_of_variant(variant_get({JSON}, '$.{name}'))")


def typed(name: str, spark_type: str) -> Column:
    """Field ``name`` read as ``spark_type``; NULL when absent or not convertible."""
    return F.expr(f"try_variant_get({JSON}, '$.{name}', '{spark_type}')")


class TypedRecord:
    """What a rule's ``check`` receives: the record's fields as typed columns."""

    def __init__(self, record_type: RecordType) -> None:
        self._type = record_type

    def __getattr__(self, name: str) -> Column:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, name: str) -> Column:
        try:
            spec = self._type.field(name)
        except StopIteration:
            raise KeyError(f"{self._type.name} has no field {name!r}") from None
        return typed(name, spec.spark_type)

    def trimmed(self, name: str) -> Column:
        return F.trim(self[name])

    @property
    def ingest_time_ms(self) -> Column:
        return F.col(INGEST_TIME_MS)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"TypedRecord({self._type.name})"


def avro_struct(record_type: RecordType) -> Column:
    """The validated record as a struct in the field order of its Avro schema."""
    columns: list[Any] = []
    for field in record_type.schema.parsed["fields"]:
        name = field["name"]
        if name == "ingest_time":
            columns.append(F.col(INGEST_TIME_MS).alias(name))
            continue
        spec = record_type.field(name)
        value = typed(name, spec.spark_type)
        if spec.avro_type == "map":
            value = F.coalesce(value, F.create_map().cast(spec.spark_type))
        columns.append(value.alias(name))
    return F.struct(*columns)
