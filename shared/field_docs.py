"""What a declared field is, read from its dataclass: name, type, default and the ``#:`` comment
above it in the source.

Settings, detector manifests and the notifier's channels are frozen dataclasses whose fields say
what they mean in a ``#:`` comment. ``mesh settings`` prints them from here, so the description a
person reads is the one beside the code, never a copy that drifts.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.settings import PROJECT_ROOT


@dataclass(frozen=True)
class FieldDoc:
    """One field as a person reads it."""

    name: str
    type: str
    #: The default as text; empty for a required field (see ``required``) or an empty default.
    default: str
    required: bool
    description: str
    #: The range a number must be in, from the field's metadata (empty: any).
    limits: str = ""


def field_docs(cls: type) -> list[tuple[FieldDoc, dataclasses.Field[object]]]:
    """Each field of dataclass ``cls`` (but those with ``metadata={"variable": False}``), in
    declaration order, with its dataclass field."""
    comments = _field_comments(cls)
    return [
        (FieldDoc(f.name, type_name(f.type), value_text(default_of(f)), _required(f),
                  comments.get(f.name, ""), limits(f.metadata)), f)
        for f in dataclasses.fields(cls)
        if f.metadata.get("variable", True)
    ]  # fmt: skip


def default_of(f: dataclasses.Field[object]) -> object:
    """The field's default value (None for a required field)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def value_text(value: object) -> str:
    """A value as a person reads it; paths inside the checkout relative to it."""
    if value is None:
        return ""
    if isinstance(value, Path):
        try:
            return str(value.relative_to(PROJECT_ROOT)) or "."
        except ValueError:
            return str(value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def limits(metadata: Mapping[str, Any]) -> str:
    """``1 or more``, ``0 to 10000 milliseconds``: a number field's range as a person reads it."""
    low, high = metadata.get("minimum"), metadata.get("maximum")
    unit = f" {metadata['unit']}" if "unit" in metadata else ""
    if low is not None and high is not None:
        return f"{low:g} to {high:g}{unit}"
    if low is not None:
        return f"{low:g}{unit} or more"
    return f"{high:g}{unit} or less" if high is not None else ""


def type_name(annotation: object) -> str:
    return str(annotation).replace("pathlib.", "")


def _required(f: dataclasses.Field[object]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _field_comments(cls: type) -> dict[str, str]:
    """``field name -> the #: comment lines above it``, joined, from ``cls``'s source."""
    lines = inspect.getsource(cls).splitlines()
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        name, colon, _ = stripped.partition(":")
        if colon and name.isidentifier() and line.startswith("    ") and not line[4].isspace():
            comments[name] = " ".join(pending)
        pending = []
    return comments
