"""The project's rules for schema files, beyond what Avro itself requires.

Every schema must also be readable by Spark's ``from_avro`` and by people: Spark turns a union
other than ``["null", X]`` into a struct of ``member0, member1, ...`` columns, so only nullable
unions are allowed; every top-level record is in the ``mesh`` namespace so full names are
predictable (``mesh.Transaction``). A record renamed between versions is caught by the
compatibility check (names must match or be aliased).
"""

from __future__ import annotations

from typing import Any

from shared.avro.catalogue import Catalogue, SchemaVersion

NAMESPACE = "mesh"


def lint_catalogue(catalogue: Catalogue, namespace: str = NAMESPACE) -> list[str]:
    """Problems of every schema version, prefixed with its label (``transaction v2: ...``)."""
    problems: list[str] = []
    for sv in catalogue:
        problems += [f"{sv.label}: {p}" for p in lint_schema(sv, namespace)]
    return problems


def lint_schema(sv: SchemaVersion, namespace: str = NAMESPACE) -> list[str]:
    """Problems of one schema version; [] if it follows the rules."""
    top = sv.parsed
    problems: list[str] = []
    if not str(top["name"]).startswith(namespace + "."):
        problems.append(f"record {top['name']} must be in the {namespace!r} namespace")
    _walk(top, sv.name, problems)
    return problems


def _walk(node: Any, path: str, problems: list[str]) -> None:
    if isinstance(node, list):
        non_null = [b for b in node if b != "null"]
        if len(node) != 2 or len(non_null) != 1:
            problems.append(
                f'{path}: only ["null", X] unions are allowed (Spark reads other unions as '
                f"structs of members); found {len(node)} branches"
            )
        for branch in node:
            _walk(branch, path, problems)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in ("record", "error"):
            for field in node.get("fields", ()):
                _walk(field["type"], f"{path}.{field['name']}", problems)
        elif kind == "array":
            _walk(node["items"], f"{path}[]", problems)
        elif kind == "map":
            _walk(node["values"], f"{path}{{}}", problems)
        elif isinstance(kind, (dict, list)):
            _walk(kind, path, problems)
