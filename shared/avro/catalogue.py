"""The schema catalogue: every ``schemas/<name>/v<N>.avsc``, parsed and fingerprinted once.

Readers find a writer schema by the fingerprint in the message header, so the catalogue indexes
every version of every schema by its CRC-64-AVRO fingerprint. Parsing and fingerprinting happen
once per process (:func:`load_catalogue` is cached); the hot path only does a dict lookup.

Timestamps are plain ``int`` epoch milliseconds in Python, like the raw records customers send:
the codec schema drops ``logicalType`` annotations before handing the schema to fastavro, so it
neither builds a ``datetime`` per field on decode nor demands one on encode. The bytes on the
wire are identical (a logical type only annotates the underlying ``long``), the fingerprint is
identical (the Parsing Canonical Form has no logical types) and the files keep their annotations,
so Spark and Java still see timestamps.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import fingerprint as _fastavro_fingerprint
from fastavro.schema import to_parsing_canonical_form

from shared.avro.errors import SchemaError
from shared.settings import Settings

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_FILE = re.compile(r"v([1-9][0-9]*)\.avsc")
_PRIMITIVE_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "int": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "bytes": (str,),
    "string": (str,),
}


@dataclass(frozen=True, eq=False)
class SchemaVersion:
    """One version of one schema, ready for encoding, decoding and compatibility checks."""

    #: Folder name under schemas/, e.g. ``transaction``.
    name: str
    #: The N of ``vN.avsc``.
    version: int
    path: Path
    #: The file's text, e.g. for Spark's ``from_avro(col, json_schema)``.
    text: str
    #: fastavro-parsed schema, faithful to the file (logical types included).
    parsed: dict[str, Any]
    #: fastavro-parsed schema without logical types: what the codec uses (see module doc).
    codec_schema: dict[str, Any]
    #: The Parsing Canonical Form the fingerprint is computed from.
    canonical_form: str
    #: CRC-64-AVRO of the canonical form, 8 bytes in little-endian order, as on the wire.
    fingerprint: bytes

    @property
    def full_name(self) -> str:
        """Fully qualified Avro name of the top-level type, e.g. ``mesh.Transaction``."""
        return str(self.parsed.get("name", self.parsed.get("type")))

    @property
    def label(self) -> str:
        """``transaction v2``: how messages refer to this version."""
        return f"{self.name} v{self.version}"

    def __repr__(self) -> str:
        return (
            f"SchemaVersion({self.label}, {self.full_name}, fingerprint={self.fingerprint.hex()})"
        )


class Catalogue:
    """All schema versions, by name and version and by fingerprint."""

    def __init__(self, versions: Iterable[SchemaVersion], source: Path | None = None) -> None:
        self.source = source
        by_name: dict[str, list[SchemaVersion]] = {}
        self._by_fingerprint: dict[bytes, SchemaVersion] = {}
        for sv in sorted(versions, key=lambda v: (v.name, v.version)):
            by_name.setdefault(sv.name, []).append(sv)
            # Two versions with the same canonical form write identical bytes, so either one is
            # a correct writer schema; keep the newest for the sake of determinism.
            self._by_fingerprint[sv.fingerprint] = sv
        self._by_name = {name: tuple(svs) for name, svs in by_name.items()}

    @classmethod
    def load(cls, schemas_dir: Path | str) -> Catalogue:
        """Read every ``<name>/v<N>.avsc`` under ``schemas_dir``; bad files raise SchemaError."""
        root = Path(schemas_dir)
        if not root.is_dir():
            raise SchemaError(
                f"schema folder {root} does not exist; set MESH_SCHEMAS_DIR to the project's "
                "schemas/ folder"
            )
        versions = [load_schema_file(path) for path in sorted(root.glob("*/*.avsc"))]
        if not versions:
            raise SchemaError(f"no schemas/<name>/v<N>.avsc files under {root}")
        return cls(versions, source=root)

    def names(self) -> list[str]:
        """Schema names, sorted."""
        return sorted(self._by_name)

    def versions(self, name: str) -> tuple[SchemaVersion, ...]:
        """Every version of ``name``, oldest first."""
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(
                f"unknown schema {name!r}; the catalogue has: {', '.join(self.names())}"
            ) from None

    def get(self, name: str, version: int | None = None) -> SchemaVersion:
        """Version ``version`` of ``name``, or its latest version when ``version`` is None."""
        svs = self.versions(name)
        if version is None:
            return svs[-1]
        for sv in svs:
            if sv.version == version:
                return sv
        have = ", ".join(f"v{sv.version}" for sv in svs)
        raise SchemaError(f"schema {name!r} has no v{version}; it has {have}")

    def by_fingerprint(self, fingerprint: bytes) -> SchemaVersion | None:
        """The schema version whose fingerprint this is, or None."""
        return self._by_fingerprint.get(fingerprint)

    def __iter__(self) -> Iterator[SchemaVersion]:
        for name in self.names():
            yield from self._by_name[name]

    def __len__(self) -> int:
        return sum(len(svs) for svs in self._by_name.values())


def load_schema_file(path: Path) -> SchemaVersion:
    """Parse one ``<name>/v<N>.avsc`` file; any problem raises SchemaError naming the file."""
    name = path.parent.name
    match = _FILE.fullmatch(path.name)
    if not _NAME.fullmatch(name) or not match:
        raise SchemaError(
            f"{path}: schema files must be named schemas/<name>/v<N>.avsc with a lower-case "
            "name and N >= 1"
        )
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaError(f"{path}: cannot read the schema: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("type") != "record":
        raise SchemaError(f"{path}: the top-level type must be a record (a JSON object)")
    try:
        parsed = fastavro.parse_schema(raw)
        codec_schema = fastavro.parse_schema(without_logical_types(raw))
        canonical = to_parsing_canonical_form(raw)
        fingerprint = _crc64_avro(canonical)
    except Exception as exc:  # fastavro raises several unrelated types for a bad schema
        raise SchemaError(f"{path}: not a valid Avro schema: {exc}") from exc
    problems = union_default_problems(raw)
    if problems:
        raise SchemaError(f"{path}: {'; '.join(problems)}")
    assert isinstance(parsed, dict) and isinstance(codec_schema, dict)  # a record, checked above
    return SchemaVersion(
        name=name,
        version=int(match.group(1)),
        path=path,
        text=text,
        parsed=parsed,
        codec_schema=codec_schema,
        canonical_form=canonical,
        fingerprint=fingerprint,
    )


def fingerprint(schema: Any) -> bytes:
    """CRC-64-AVRO fingerprint of ``schema``'s Parsing Canonical Form, as the 8 wire bytes.

    fastavro gives the hex of the little-endian bytes, which is what the single-object header
    carries: the bytes are used as they are, never reinterpreted as an integer.
    """
    try:
        canonical = to_parsing_canonical_form(schema)
    except Exception as exc:  # fastavro raises several unrelated types for a bad schema
        raise SchemaError(f"not a valid Avro schema: {exc}") from exc
    return _crc64_avro(canonical)


def _crc64_avro(canonical_form: str) -> bytes:
    return bytes.fromhex(_fastavro_fingerprint(canonical_form, "CRC-64-AVRO"))


@functools.lru_cache(maxsize=8)
def _load_cached(schemas_dir: Path) -> Catalogue:
    return Catalogue.load(schemas_dir)


def load_catalogue(schemas_dir: Path | str | None = None) -> Catalogue:
    """The catalogue of ``schemas_dir`` (default: ``Settings.from_env().schemas_dir``), cached."""
    if schemas_dir is None:
        schemas_dir = Settings.from_env().schemas_dir
    return _load_cached(Path(schemas_dir).resolve())


def union_default_problems(schema: Any, path: str = "") -> list[str]:
    """Fields whose default does not match the first branch of their union.

    The specification requires it and the Java library (hence Spark) refuses such a schema, but
    fastavro accepts a default matching any branch; checking here keeps the two in agreement.
    Only primitive first branches are checked in depth: the project's unions are ``["null", X]``.
    """
    problems: list[str] = []
    if isinstance(schema, list):
        for branch in schema:
            problems += union_default_problems(branch, path)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "error"):
            here = f"{path}.{schema.get('name')}" if path else str(schema.get("name"))
            for field in schema.get("fields", []):
                field_path = f"{here}.{field.get('name')}"
                ftype = field.get("type")
                if isinstance(ftype, list) and ftype and "default" in field:
                    problems += _first_branch_problem(field_path, ftype[0], field["default"])
                problems += union_default_problems(ftype, field_path)
        elif kind == "array":
            problems += union_default_problems(schema.get("items"), path)
        elif kind == "map":
            problems += union_default_problems(schema.get("values"), path)
        elif isinstance(kind, (dict, list)):
            problems += union_default_problems(kind, path)
    return problems


def _first_branch_problem(path: str, first: Any, default: Any) -> list[str]:
    kind = first.get("type") if isinstance(first, dict) else first
    allowed = _PRIMITIVE_PYTHON_TYPES.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        return [] if default is not None else [_default_msg(path, first, default)]
    if kind in ("int", "long", "float", "double") and isinstance(default, bool):
        return [_default_msg(path, first, default)]
    return [] if isinstance(default, allowed) else [_default_msg(path, first, default)]


def _default_msg(path: str, first: Any, default: Any) -> str:
    return (
        f"{path}: default {json.dumps(default)} must match the first branch of the union "
        f'({json.dumps(first)}); put that branch first (e.g. "null" first for a null default)'
    )


def without_logical_types(node: Any) -> Any:
    """A copy of a schema with every ``logicalType`` removed (defaults left untouched)."""
    if isinstance(node, list):
        return [without_logical_types(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "logicalType":
            continue
        if key in ("type", "items", "values"):
            out[key] = without_logical_types(value)
        elif key == "fields" and isinstance(value, list):
            out[key] = [without_logical_types(field) for field in value]
        else:
            out[key] = value
    return out
