"""The compatibility check: real schemas pass, broken evolutions fail naming the field."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import avro.compatibility
import avro.schema
import pytest

from shared.avro.compatibility import check_compatibility, check_schemas_dir, main

WriteSchemas = Callable[[dict[str, list[Any]]], Path]


def _field(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def _thing_v1() -> dict[str, Any]:
    """A record exercising every kind of type, as version 1 of a schema called ``thing``."""
    return {
        "type": "record",
        "name": "Thing",
        "namespace": "mesh",
        "fields": [
            _field("id", "string"),
            _field("amount", "double"),
            _field("count", "int"),
            _field("status", {"type": "enum", "name": "Status", "symbols": ["NEW", "DONE"]}),
            _field("tags", {"type": "array", "items": "string"}),
            _field("attrs", {"type": "map", "values": "string"}),
            _field(
                "address",
                {"type": "record", "name": "Address", "fields": [_field("city", "string")]},
            ),
            _field("digest", {"type": "fixed", "name": "Digest", "size": 16}),
            _field("note", ["null", "string"], default=None),
        ],
    }


def _fields(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in schema["fields"]}


def _evolve(change: Callable[[dict[str, Any]], None]) -> tuple[dict[str, Any], dict[str, Any]]:
    v1 = _thing_v1()
    v2 = copy.deepcopy(v1)
    change(v2)
    return v1, v2


def _add(field: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["fields"].append(field)


def _drop(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["fields"].remove(_fields(s)[name])


def _retype(name: str, new_type: Any, **extra: Any) -> Callable[[dict[str, Any]], None]:
    def change(s: dict[str, Any]) -> None:
        _fields(s)[name]["type"] = new_type
        _fields(s)[name].update(extra)

    return change


def _symbols(symbols: list[str], default: str | None = None) -> Callable[[dict[str, Any]], None]:
    def change(s: dict[str, Any]) -> None:
        enum = _fields(s)["status"]["type"]
        enum["symbols"] = symbols
        if default:
            enum["default"] = default

    return change


def _rename(old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def change(s: dict[str, Any]) -> None:
        field = _fields(s)[old]
        field["name"] = new
        field["aliases"] = [old]

    return change


def _set(**attrs: Any) -> Callable[[dict[str, Any]], None]:
    return lambda s: s.update(attrs)


def _nested_city(new_type: str) -> Callable[[dict[str, Any]], None]:
    return lambda s: _fields(_fields(s)["address"]["type"])["city"].update(type=new_type)


# (id, change from v1 to v2, expected backward problem or None, expected forward problem or None)
EVOLUTIONS: list[tuple[str, Callable[[dict[str, Any]], None], str | None, str | None]] = [
    ("add-optional-field", _add(_field("extra", ["null", "long"], default=None)), None, None),
    ("add-field-with-default", _add(_field("level", "int", default=3)), None, None),
    (
        "add-required-field",
        _add(_field("score", "double")),
        "thing.score: the writer has no such field and the reader field has no default",
        None,
    ),
    (
        "remove-required-field",
        _drop("amount"),
        None,
        "thing.amount: the writer has no such field and the reader field has no default",
    ),
    ("remove-field-with-default", _drop("note"), None, None),
    (
        "string-to-double",
        _retype("id", "double"),
        "thing.id: writer type string cannot be read as double",
        "thing.id: writer type double cannot be read as string",
    ),
    (
        "int-to-long",
        _retype("count", "long"),
        None,
        "thing.count: writer type long cannot be read as int",
    ),
    ("string-to-bytes", _retype("id", "bytes"), None, None),
    (
        "enum-symbol-removed",
        _symbols(["NEW"]),
        "thing.status: writer enum symbol(s) DONE are not in the reader enum mesh.Status",
        None,
    ),
    (
        "enum-symbol-added",
        _symbols(["NEW", "DONE", "LOST"]),
        None,
        "thing.status: writer enum symbol(s) LOST are not in the reader enum mesh.Status",
    ),
    (
        "enum-symbol-added-with-default-only-in-new",
        _symbols(["NEW", "DONE", "LOST"], default="NEW"),
        None,
        "thing.status: writer enum symbol(s) LOST",
    ),
    (
        "field-renamed-with-alias",
        _rename("amount", "total"),
        None,
        "thing.amount: the writer has no such field and the reader field has no default",
    ),
    (
        "nested-field-type-change",
        _nested_city("int"),
        "thing.address.city: writer type string cannot be read as int",
        "thing.address.city: writer type int cannot be read as string",
    ),
    (
        "array-items-change",
        _retype("tags", {"type": "array", "items": "long"}),
        "thing.tags[]: writer type string cannot be read as long",
        "thing.tags[]: writer type long cannot be read as string",
    ),
    (
        "map-values-widened",
        _retype("attrs", {"type": "map", "values": "bytes"}),
        None,
        None,
    ),
    (
        "map-to-array",
        _retype("attrs", {"type": "array", "items": "string"}),
        "thing.attrs: writer type map<string> cannot be read as array<string>",
        "thing.attrs: writer type array<string> cannot be read as map<string>",
    ),
    (
        "made-nullable",
        _retype("amount", ["null", "double"], default=None),
        None,
        "thing.amount: writer type null (a branch of the writer's union) cannot be read as double",
    ),
    (
        "union-loses-its-string",
        _retype("note", ["null", "long"], default=None),
        "thing.note: writer type string (a branch of the writer's union) matches no branch of "
        "the reader union [null, long]",
        "thing.note: writer type long (a branch of the writer's union) matches no branch of the "
        "reader union [null, string]",
    ),
    (
        "fixed-size-change",
        _retype("digest", {"type": "fixed", "name": "Digest", "size": 32}),
        "thing.digest: writer fixed mesh.Digest of size 16 cannot be read as size 32",
        "thing.digest: writer fixed mesh.Digest of size 32 cannot be read as size 16",
    ),
    (
        "record-renamed",
        _set(name="Gadget"),
        "thing: writer record mesh.Thing cannot be read as record mesh.Gadget",
        "thing: writer record mesh.Gadget cannot be read as record mesh.Thing",
    ),
    (
        "record-renamed-with-alias",
        _set(name="Gadget", aliases=["Thing"]),
        None,
        "thing: writer record mesh.Gadget cannot be read as record mesh.Thing",
    ),
]


@pytest.mark.parametrize(
    ("case", "change", "backward", "forward"), EVOLUTIONS, ids=[e[0] for e in EVOLUTIONS]
)
def test_evolution_is_judged_in_both_directions(
    write_schemas: WriteSchemas,
    case: str,
    change: Callable[[dict[str, Any]], None],
    backward: str | None,
    forward: str | None,
) -> None:
    v1, v2 = _evolve(change)
    problems = check_schemas_dir(write_schemas({"thing": [v1, v2]}))
    expected = []
    if backward:
        expected.append(("thing v2 cannot read thing v1 data (backward): ", backward))
    if forward:
        expected.append(("thing v1 cannot read thing v2 data (forward): ", forward))
    assert len(problems) == len(expected), problems
    for problem, (prefix, message) in zip(problems, expected, strict=True):
        assert problem.startswith(prefix + message), problem


@pytest.mark.parametrize("change", [e[1] for e in EVOLUTIONS], ids=[e[0] for e in EVOLUTIONS])
def test_verdicts_agree_with_the_reference_avro_library(
    change: Callable[[dict[str, Any]], None],
) -> None:
    v1, v2 = _evolve(change)
    for reader, writer in ((v2, v1), (v1, v2)):
        ours = check_compatibility(reader, writer)
        reference = avro.compatibility.ReaderWriterCompatibilityChecker().get_compatibility(
            avro.schema.parse(json.dumps(_qualified_aliases(reader))),
            avro.schema.parse(json.dumps(writer)),
        )
        compatible = (
            reference.compatibility is avro.compatibility.SchemaCompatibilityType.compatible
        )
        assert (ours == []) == compatible, (ours, reference.messages)


def _qualified_aliases(schema: dict[str, Any]) -> dict[str, Any]:
    # The reference library compares record aliases with full names verbatim.
    out = copy.deepcopy(schema)
    if "aliases" in out:
        out["aliases"] = [f"{out['namespace']}.{a}" for a in out["aliases"]]
    return out


PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
PROMOTABLE = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}


@pytest.mark.parametrize("writer", PRIMITIVES)
@pytest.mark.parametrize("reader", PRIMITIVES)
def test_primitive_promotions_follow_the_specification(writer: str, reader: str) -> None:
    problems = check_compatibility(reader, writer, root="value")
    if writer == reader or (writer, reader) in PROMOTABLE:
        assert problems == []
    else:
        assert problems == [f"value: writer type {writer} cannot be read as {reader}"]


def test_non_union_writer_is_read_by_a_promoting_union_branch() -> None:
    assert check_compatibility(["null", "double"], "int") == []
    assert check_compatibility(["null", "string"], "int", root="v") == [
        "v: writer type int matches no branch of the reader union [null, string]"
    ]


def test_enum_default_in_the_reader_accepts_unknown_symbols() -> None:
    reader = {"type": "enum", "name": "S", "symbols": ["A", "OTHER"], "default": "OTHER"}
    writer = {"type": "enum", "name": "S", "symbols": ["A", "B"]}
    assert check_compatibility(reader, writer) == []
    without_default = {"type": "enum", "name": "S", "symbols": ["A", "OTHER"]}
    assert check_compatibility(without_default, writer, root="s") == [
        "s: writer enum symbol(s) B are not in the reader enum S, which has no default symbol"
    ]


def test_recursive_schemas_terminate_and_are_checked() -> None:
    def node(value_type: str) -> dict[str, Any]:
        return {
            "type": "record",
            "name": "Node",
            "fields": [_field("value", value_type), _field("next", ["null", "Node"], default=None)],
        }

    assert check_compatibility(node("long"), node("int")) == []
    assert check_compatibility(node("int"), node("long")) == [
        "Node.value: writer type long cannot be read as int"
    ]


def test_real_schemas_are_compatible(schemas_dir: Path) -> None:
    assert check_schemas_dir(schemas_dir) == []


def test_version_gaps_are_refused(write_schemas: WriteSchemas) -> None:
    root = write_schemas({"thing": [_thing_v1(), _thing_v1()]})
    (root / "thing" / "v2.avsc").rename(root / "thing" / "v3.avsc")
    assert check_schemas_dir(root) == [
        "thing: versions must be v1, v2, ... without gaps; found v1, v3"
    ]


def test_project_rules_refuse_wide_unions_and_foreign_namespaces(
    write_schemas: WriteSchemas,
) -> None:
    v1 = _thing_v1()
    _fields(v1)["note"]["type"] = ["null", "string", "long"]
    v1["namespace"] = "acme"
    problems = check_schemas_dir(write_schemas({"thing": [v1]}))
    assert problems == [
        "thing v1: record acme.Thing must be in the 'mesh' namespace",
        'thing v1: thing.note: only ["null", X] unions are allowed (Spark reads other unions as '
        "structs of members); found 3 branches",
    ]


def test_an_unreadable_schema_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "thing").mkdir()
    (tmp_path / "thing" / "v1.avsc").write_text("{")
    [problem] = check_schemas_dir(tmp_path)
    assert "thing/v1.avsc" in problem


def test_command_prints_each_problem_and_fails(
    write_schemas: WriteSchemas, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = _evolve(_retype("amount", "string"))
    assert main([str(write_schemas({"thing": [v1, v2]}))]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "thing v2 cannot read thing v1 data (backward): thing.amount: writer type double cannot "
        "be read as string",
        "thing v1 cannot read thing v2 data (forward): thing.amount: writer type string cannot "
        "be read as double",
    ]


def test_command_passes_on_the_real_schemas(schemas_dir: Path) -> None:
    # As `make test` runs it: a module entry point, in a fresh interpreter.
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "shared.avro.compatibility", str(schemas_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
