"""A YAML mapping read into a dataclass by its declared fields: each mistake is one line that
names the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from shared.errors import ConfigError
from shared.field_docs import field_docs
from shared.typed_document import checked, read_document


def _even(value: Any, where: str) -> int:
    if not isinstance(value, int) or value % 2:
        raise ConfigError(f"{where} must be even")
    return value


@dataclass(frozen=True)
class Example:
    #: Who it is.
    name: str
    #: How many.
    count: int = field(default=1, metadata={"minimum": 1, "maximum": 9})
    #: How long.
    wait_s: float = field(default=0.5, metadata={"minimum": 0, "unit": "seconds"})
    #: Whether.
    enabled: bool = True
    #: An even number.
    pair: int = field(default=2, metadata=checked(_even))
    #: Not a key of the document.
    origin: str = field(default="", metadata={"variable": False})


def test_values_are_read_and_defaults_left_to_the_dataclass() -> None:
    values = read_document(Example, {"name": "a", "count": 3, "wait_s": 2}, "x.yaml")
    assert values == {"name": "a", "count": 3, "wait_s": 2}
    assert Example(**values) == Example("a", 3, 2, True, 2, "")


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (["name"], "x.yaml: expected a mapping of name"),
        ({}, "x.yaml: missing field `name`"),
        ({"name": "a", "colour": 1}, "x.yaml: unknown field `colour`; allowed: name, count, "
                                     "wait_s, enabled, pair"),
        ({"name": "a", "origin": "b"}, "x.yaml: unknown field `origin`"),
        ({"name": " "}, "x.yaml: field `name` must be a non-empty string"),
        ({"name": "a", "count": 0}, "x.yaml: field `count` must be a whole number from 1 to 9, "
                                    "not 0"),
        ({"name": "a", "count": 2.0}, "x.yaml: field `count` must be a whole number"),
        ({"name": "a", "count": True}, "x.yaml: field `count` must be a whole number"),
        ({"name": "a", "wait_s": -1}, "x.yaml: field `wait_s` must be a number of seconds >= 0"),
        ({"name": "a", "wait_s": float("nan")}, "x.yaml: field `wait_s` must be a number"),
        ({"name": "a", "enabled": "yes"}, "x.yaml: field `enabled` must be true or false"),
        ({"name": "a", "pair": 3}, "x.yaml: field `pair` must be even"),
    ],
)  # fmt: skip
def test_each_mistake_is_one_line_naming_the_field(document: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_document(Example, document, "x.yaml")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_the_fields_document_themselves_from_their_declaration() -> None:
    docs = {doc.name: doc for doc, _ in field_docs(Example)}
    assert list(docs) == ["name", "count", "wait_s", "enabled", "pair"]
    assert (docs["name"].required, docs["name"].description) == (True, "Who it is.")
    assert (docs["count"].default, docs["count"].type) == ("1", "int")
    assert docs["enabled"].default == "true"
    assert (docs["count"].limits, docs["wait_s"].limits) == ("1 to 9", "0 seconds or more")
