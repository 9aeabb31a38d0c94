"""Which fields of its record a detector reads, found in the source of ``detect``.

A backtest reads the history, a columnar table of every field of every record. A detector like
large_amount looks at two of a transaction's twenty fields; reading only those (plus the ones an
alert is built from) makes Spark's scan and the building of each record's dict several times
cheaper (docs/benchmarks.md). The detector is not asked to declare anything: its ``detect`` is
read, and the answer is only given when the source leaves no doubt, that is when the record
parameter is used in nothing but ``record["name"]`` and ``record.get("name"...)`` with literal
names. Anything else (the record handed to a helper, iterated, tested with ``in``, stored,
reached as ``ctx.record``, a wrapped function, no source) means "every field", with the reason,
so the backtest is never wrong, only slower.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Fields read for every record whatever ``detect`` does: an alert is built from the record's
#: id, customer and event time (shared.detector.alerts), and a task's stream time is its
#: records' event time (shared.detector.task).
RUNTIME_FIELDS = frozenset({"record_id", "customer_id", "event_time"})


@dataclass(frozen=True)
class FieldsRead:
    """The fields to read for a detector, or ``None`` for all of them, and why."""

    fields: frozenset[str] | None
    reason: str

    def describe(self) -> str:
        if self.fields is None:
            return f"every field ({self.reason})"
        return ", ".join(sorted(self.fields))


def fields_read(detect: Callable[..., Any]) -> FieldsRead:
    """The record fields ``detect`` can read, :data:`RUNTIME_FIELDS` included."""
    found = _literal_fields(detect)
    if isinstance(found, str):
        return FieldsRead(None, found)
    return FieldsRead(frozenset(found | RUNTIME_FIELDS), "read from the source of detect()")


def _literal_fields(detect: Callable[..., Any]) -> set[str] | str:
    """The literal field names, or a string saying why they cannot be known."""
    if hasattr(detect, "__wrapped__"):
        return "detect() is wrapped by another decorator"
    try:
        source = textwrap.dedent(inspect.getsource(detect))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return "the source of detect() is not available"
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    function = next((node for node in ast.walk(tree) if isinstance(node, functions)), None)
    if function is None or not (function.args.posonlyargs or function.args.args):
        return "detect() has no record parameter"
    record = (function.args.posonlyargs + function.args.args)[0].arg
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    fields: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and node.attr == "record":
            return f"line {node.lineno} reaches the record as `.record`"
        if not (isinstance(node, ast.Name) and node.id == record):
            continue
        name = _field_of(node, parents)
        if name is None:
            return (
                f"line {node.lineno} uses `{record}` other than {record}['name'] or "
                f"{record}.get('name')"
            )
        fields.add(name)
    return fields


def _field_of(use: ast.Name, parents: dict[ast.AST, ast.AST]) -> str | None:
    """``record["x"]`` or ``record.get("x"...)`` read as ``x``; any other use as ``None``."""
    parent = parents.get(use)
    if (
        isinstance(parent, ast.Subscript)
        and parent.value is use
        and isinstance(parent.ctx, ast.Load)
        and isinstance(parent.slice, ast.Constant)
        and isinstance(parent.slice.value, str)
    ):
        return parent.slice.value
    call = parents.get(parent) if parent is not None else None
    if (
        isinstance(parent, ast.Attribute)
        and parent.attr == "get"
        and isinstance(call, ast.Call)
        and call.func is parent
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        return call.args[0].value
    return None
