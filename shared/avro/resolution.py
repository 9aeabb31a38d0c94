"""Can a reader schema read what a writer schema wrote? The Avro "Schema Resolution" rules.

Producers and consumers are upgraded one at a time, so for some minutes new consumers read old
data and old consumers read new data. :func:`check_compatibility` decides whether that works,
statically, from the two schemas, and names the offending field, e.g.::

    transaction.amount: writer type string cannot be read as double

The deserializer uses it to decide up front which writer schemas it can resolve;
:mod:`shared.avro.compatibility` uses it to check consecutive schema versions.

Rules implemented (Avro specification 1.12, "Schema Resolution"; union branch choice as the
Java library's resolver does it):

* primitives match themselves; promotions int→long/float/double, long→float/double,
  float→double, string↔bytes; logical types are ignored;
* records, enums and fixed match by unqualified name or a reader alias of the writer's full
  name; record fields match by name or reader field alias; a reader field the writer lacks needs
  a default; writer fields the reader lacks are skipped;
* every writer enum symbol must be a reader symbol unless the reader enum has a default;
* fixed sizes must be equal; arrays and maps resolve their items / values;
* every branch of a writer union must be readable; a non-union writer value is read by the
  first reader union branch of the same type (then the first it can be promoted to).
"""

from __future__ import annotations

from typing import Any

import fastavro

from shared.avro.errors import SchemaError

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
#: writer type -> reader types it can be promoted to.
PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}


def check_compatibility(reader: Any, writer: Any, root: str | None = None) -> list[str]:
    """Problems that stop ``reader`` from reading data written with ``writer``; [] if none.

    Both schemas may be raw JSON (dict/list/str) or fastavro-parsed. Each problem starts with the
    path of the offending field, rooted at ``root`` (default: the reader's unqualified name).
    """
    reader_names: dict[str, Any] = {}
    writer_names: dict[str, Any] = {}
    try:
        parsed_reader = fastavro.parse_schema(reader, reader_names)
        parsed_writer = fastavro.parse_schema(writer, writer_names)
    except Exception as exc:  # fastavro raises several unrelated types for a bad schema
        raise SchemaError(f"not a valid Avro schema: {exc}") from exc
    if root is None:
        top = _deref(parsed_reader, reader_names)
        root = _short(top["name"]) if isinstance(top, dict) and "name" in top else "root"
    return _Checker(reader_names, writer_names).check(parsed_reader, parsed_writer, root)


class _Checker:
    """One reader/writer comparison; remembers named pairs so recursive types terminate."""

    def __init__(self, reader_names: dict[str, Any], writer_names: dict[str, Any]) -> None:
        self.reader_names = reader_names
        self.writer_names = writer_names
        self.seen: set[tuple[str, str]] = set()

    def check(self, reader: Any, writer: Any, path: str, in_union: bool = False) -> list[str]:
        r = _deref(reader, self.reader_names)
        w = _deref(writer, self.writer_names)
        if isinstance(w, list):
            problems: list[str] = []
            for branch in w:
                problems += self.check(r, branch, path, in_union=True)
            return problems
        if isinstance(r, list):
            chosen = self._pick_branch(r, w)
            if chosen is None:
                return [
                    f"{path}: writer type {_describe(w)}{_union_note(in_union)} matches no "
                    f"branch of the reader union {_describe(r)}"
                ]
            return self.check(chosen, w, path, in_union)
        rk, wk = _kind(r), _kind(w)
        if rk != wk:
            if wk in PROMOTIONS and rk in PROMOTIONS[wk]:
                return []
            return [
                f"{path}: writer type {_describe(w)}{_union_note(in_union)} cannot be read as "
                f"{_describe(r)}"
            ]
        if wk in PRIMITIVES:
            return []
        if wk == "array":
            return self.check(r["items"], w["items"], f"{path}[]")
        if wk == "map":
            return self.check(r["values"], w["values"], f"{path}{{}}")
        return self._check_named(r, w, wk, path)

    def _check_named(self, r: dict[str, Any], w: dict[str, Any], kind: str, path: str) -> list[str]:
        if not _names_match(r, w):
            return [
                f"{path}: writer {kind} {w['name']} cannot be read as {kind} {r['name']}: the "
                "names differ and the reader has no alias for the writer's name"
            ]
        key = (r["name"], w["name"])
        if key in self.seen:
            return []
        self.seen.add(key)
        if kind == "fixed":
            if r["size"] != w["size"]:
                return [
                    f"{path}: writer fixed {w['name']} of size {w['size']} cannot be read as "
                    f"size {r['size']}"
                ]
            return []
        if kind == "enum":
            missing = [s for s in w["symbols"] if s not in r["symbols"]]
            if missing and "default" not in r:
                return [
                    f"{path}: writer enum symbol(s) {', '.join(missing)} are not in the reader "
                    f"enum {r['name']}, which has no default symbol"
                ]
            return []
        return self._check_record(r, w, path)

    def _check_record(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        writer_fields = {f["name"]: f for f in w["fields"]}
        problems: list[str] = []
        for rf in r["fields"]:
            field_path = f"{path}.{rf['name']}"
            wf = writer_fields.get(rf["name"])
            if wf is None:
                wf = next(
                    (writer_fields[a] for a in rf.get("aliases", ()) if a in writer_fields), None
                )
            if wf is None:
                if "default" not in rf:
                    problems.append(
                        f"{field_path}: the writer has no such field and the reader field has no "
                        "default"
                    )
                continue
            problems += self.check(rf["type"], wf["type"], field_path)
        return problems

    def _pick_branch(self, union: list[Any], w: Any) -> Any | None:
        """The reader branch a non-union writer value resolves to (Java's ``bestBranch``)."""
        wk = _kind(w)
        branches = [_deref(b, self.reader_names) for b in union]
        for b in branches:
            if _kind(b) == wk and (wk not in NAMED or _names_match(b, w)):
                return b
        for b in branches:
            if _kind(b) in PROMOTIONS.get(wk, ()):
                return b
        return None


def _deref(node: Any, names: dict[str, Any]) -> Any:
    """Follow named references and ``{"type": ...}`` wrappers down to a concrete schema node.

    Returns a primitive type name (logical types dropped), a union list or a complex/named dict.
    """
    while True:
        if isinstance(node, str):
            if node in PRIMITIVES:
                return node
            if node not in names:
                raise SchemaError(f"schema refers to undefined type {node!r}")
            node = names[node]
        elif isinstance(node, dict):
            kind = node.get("type")
            if isinstance(kind, str) and (kind in NAMED or kind in ("array", "map")):
                return node
            node = kind
        else:
            return node


def _kind(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
    kind = node["type"]
    return "record" if kind == "error" else str(kind)


def _short(full_name: str) -> str:
    return full_name.rsplit(".", 1)[-1]


def _names_match(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    """Same unqualified name, or a reader alias (qualified by its namespace) naming the writer."""
    if _short(reader["name"]) == _short(writer["name"]):
        return True
    namespace = reader["name"].rpartition(".")[0]
    for alias in reader.get("aliases", ()):
        full = alias if "." in alias or not namespace else f"{namespace}.{alias}"
        if full == writer["name"]:
            return True
    return False


def _describe(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "[" + ", ".join(_describe_ref(b) for b in node) + "]"
    kind = node["type"]
    if kind in NAMED:
        return f"{kind} {node['name']}"
    if kind == "array":
        return f"array<{_describe_ref(node['items'])}>"
    if kind == "map":
        return f"map<{_describe_ref(node['values'])}>"
    return str(kind)


def _describe_ref(node: Any) -> str:
    """Describe without expanding named types (they may be recursive)."""
    if isinstance(node, dict) and node.get("type") in NAMED:
        return str(node["name"])
    if isinstance(node, dict) and isinstance(node.get("type"), str) and node["type"] in PRIMITIVES:
        return str(node["type"])
    return _describe(node)


def _union_note(in_union: bool) -> str:
    return " (a branch of the writer's union)" if in_union else ""
