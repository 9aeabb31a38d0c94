"""Read a YAML mapping into a frozen dataclass by its declared fields, with one-line errors.

A detector's manifest is a dataclass whose fields are the
document's keys: the field's type says what a value must be, a required field is one without a
default, and ``metadata`` adds what a type cannot say (a range, a unit, a check of its own). So
the fields a file may have, their defaults and what they mean (:mod:`shared.field_docs`) are
declared once, and every mistake is one line naming the field: missing, unknown (with the allowed
ones), or a value of the wrong kind.

Metadata keys: ``minimum`` / ``maximum`` (numbers), ``unit`` (said in the message),
``expect`` (what a string must be, for the message), ``check`` (a function of the YAML value and
the ``"<source>: field `x`"`` prefix that returns the field's value or raises), and
``"variable": False`` for a field that is not a key of the document.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from shared.errors import ConfigError

#: A field's own check: (YAML value, message prefix naming source and field) -> the value.
Check = Callable[[Any, str], Any]


def checked(check: Check, **more: object) -> dict[str, object]:
    """Field metadata with a check of its own."""
    return {"check": check, **more}


def read_document(
    cls: type, document: Any, source: str, error: type[ConfigError] = ConfigError
) -> dict[str, Any]:
    """The values of ``cls``'s fields found in ``document``, checked and converted; keys the
    document leaves out get the field's default when the dataclass is built."""
    fields = [f for f in dataclasses.fields(cls) if f.metadata.get("variable", True)]
    names = [f.name for f in fields]
    if not isinstance(document, Mapping):
        raise error(f"{source}: expected a mapping of {', '.join(_required(fields))}")
    for name in _required(fields):
        if name not in document:
            raise error(f"{source}: missing field `{name}`")
    unknown = sorted(str(key) for key in document if key not in names)
    if unknown:
        raise error(f"{source}: unknown field `{unknown[0]}`; allowed: {', '.join(names)}")
    return {
        f.name: _value(f, document[f.name], f"{source}: field `{f.name}`", error)
        for f in fields
        if f.name in document
    }


def _required(fields: list[dataclasses.Field[Any]]) -> list[str]:
    return [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def _value(f: dataclasses.Field[Any], value: Any, where: str, error: type[ConfigError]) -> Any:
    meta = f.metadata
    if "check" in meta:
        return meta["check"](value, where)
    kind = str(f.type)
    if kind == "bool":
        if not isinstance(value, bool):
            raise error(f"{where} must be true or false")
        return value
    if kind in ("int", "float"):
        return _number(value, kind == "int", meta, where, error)
    if kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise error(f"{where} must {meta.get('expect', 'be a non-empty string')}")
        return value
    raise TypeError(f"{where}: no reader for a field of type {kind}; give it a check")


def _number(
    value: Any, whole: bool, meta: Mapping[str, Any], where: str, error: type[ConfigError]
) -> int | float:
    minimum, maximum = meta.get("minimum"), meta.get("maximum")
    unit = f" of {meta['unit']}" if "unit" in meta else ""
    kind = f"a whole number{unit}" if whole else f"a number{unit}"
    if minimum is not None and maximum is not None:
        wanted = f"{kind} from {minimum} to {maximum}"
    elif minimum is not None:
        wanted = f"{kind} >= {minimum}"
    else:
        wanted = kind
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if (
        not numeric
        or (whole and not isinstance(value, int))
        or (isinstance(value, float) and not math.isfinite(value))
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise error(f"{where} must be {wanted}, not {value!r}")
    return value
