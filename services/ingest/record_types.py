"""From a raw record's topic to its Avro schema, and typed access to its JSON fields in Spark.

The Avro schema of a type is the one source of truth for its fields: which are required, which
JSON types each accepts, and the Spark type it is read as. Nothing here is written twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.avro.catalogue import Catalogue, SchemaVersion

#: Avro type -> (Spark SQL type to read it as, regex of acceptable ``schema_of_variant`` results).
_NUMBER = r"^(BIGINT|DOUBLE|DECIMAL\(\d+,\d+\))$"
_AVRO_TO_SPARK: dict[str, tuple[str, str]] = {
    "string": ("string", r"^STRING$"),
    "long": ("bigint", r"^BIGINT$"),
    "int": ("int", r"^BIGINT$"),
    "double": ("double", _NUMBER),
    "float": ("float", _NUMBER),
    "boolean": ("boolean", r"^BOOLEAN$"),
}
_JSON_NAMES = {"string": "a string", "long": "an integer", "int": "an integer",
               "double": "a number", "float": "a number", "boolean": "true or false",
               "map": "an object of strings"}  # fmt: skip


@dataclass(frozen=True)
class FieldSpec:
    """One field of a record type as ingest sees it."""

    name: str
    avro_type: str  # string, long, int, double, float, boolean or map
    required: bool
    spark_type: str
    accepted: str  # regex over schema_of_variant(...) of the JSON value

    @property
    def expected(self) -> str:
        return _JSON_NAMES[self.avro_type]


@dataclass(frozen=True)
class RecordType:
    """A raw type (``transactions``) with the latest version of its schema."""

    name: str
    schema: SchemaVersion
    fields: tuple[FieldSpec, ...]

    def field(self, name: str) -> FieldSpec:
        return next(f for f in self.fields if f.name == name)


#: Fields ingest fills itself rather than reading them from the customer's JSON.
SET_BY_INGEST = frozenset({"ingest_time"})


def record_type(name: str, schema_name: str, catalogue: Catalogue) -> RecordType:
    schema = catalogue.get(schema_name)
    fields = tuple(
        _field_spec(f) for f in schema.parsed["fields"] if f["name"] not in SET_BY_INGEST
    )
    return RecordType(name, schema, fields)


def _field_spec(field: dict[str, Any]) -> FieldSpec:
    avro = field["type"]
    required = True
    if isinstance(avro, list):  # ["null", X]: optional
        required = False
        avro = next(t for t in avro if t != "null")
    if isinstance(avro, dict) and avro.get("type") == "map":
        return FieldSpec(field["name"], "map", False, "map<string,string>", r"^OBJECT")
    base = avro["type"] if isinstance(avro, dict) else avro
    if base not in _AVRO_TO_SPARK:
        raise ValueError(f"field {field['name']}: Avro type {base} has no JSON mapping in ingest")
    spark_type, accepted = _AVRO_TO_SPARK[base]
    return FieldSpec(field["name"], base, required and "default" not in field, spark_type, accepted)
