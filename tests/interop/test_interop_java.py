"""Interop with the Apache Avro Java library's single-object message codec.

``org.apache.avro.message.BinaryMessageDecoder`` reads what the project writes and
``BinaryMessageEncoder`` writes what the project reads: the strongest evidence that our framing,
fingerprints and bodies are the specification's single-object encoding and not merely
self-consistent. Java also resolves across versions (v1 bytes read with a v2 reader after
``addSchema(v1)``, and the reverse), and, as a control, refuses a message whose schema it was not
given, proving it really checks the fingerprint.

All the work runs in one JVM per session (CI has 2 cores): the tests write a manifest of tasks,
``tests/interop/java/AvroInterop.java`` performs them, and each test checks its own output.
Records cross the language boundary in Avro's JSON encoding, written and read on the Python side
by the small codec below (fastavro's JSON writer fails on a map with an empty key, which the
examples contain on purpose).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from shared.avro import (
    AvroDeserializer,
    AvroSerializer,
    Catalogue,
    SchemaVersion,
    UnknownFingerprintError,
    load_catalogue,
)
from testkit.avro_examples import examples

pytestmark = pytest.mark.java

JAVA_SOURCE = Path(__file__).parent / "java" / "AvroInterop.java"
CATALOGUE = load_catalogue()
VERSIONS = list(CATALOGUE)
PAIRS = [pair for name in CATALOGUE.names() for pair in pairwise(CATALOGUE.versions(name))]


def _ids(sv: SchemaVersion) -> str:
    return f"{sv.name}-v{sv.version}"


def _pair_id(pair: tuple[SchemaVersion, SchemaVersion]) -> str:
    return f"{pair[0].name}-v{pair[0].version}-v{pair[1].version}"


def to_avro_json(value: Any, schema: Any, names: dict[str, Any] | None = None) -> Any:
    """A value in Avro's JSON encoding, for the project's schemas (unions are ``["null", X]``)."""
    names = schema.get("__named_schemas", {}) if names is None else names
    if isinstance(schema, str):
        if schema in names:
            return to_avro_json(value, names[schema], names)
        return value.decode("latin-1") if schema == "bytes" else value
    if isinstance(schema, list):
        if value is None:
            return None
        [branch] = [b for b in schema if b != "null"]
        return {_branch_name(branch): to_avro_json(value, branch, names)}
    kind = schema["type"]
    if kind == "record":
        return {
            f["name"]: to_avro_json(value[f["name"]], f["type"], names) for f in schema["fields"]
        }
    if kind == "array":
        return [to_avro_json(v, schema["items"], names) for v in value]
    if kind == "map":
        return {k: to_avro_json(v, schema["values"], names) for k, v in value.items()}
    if kind == "fixed":
        return value.decode("latin-1")
    if kind == "enum":
        return value
    return to_avro_json(value, kind, names)


def from_avro_json(value: Any, schema: Any, names: dict[str, Any] | None = None) -> Any:
    """The inverse of :func:`to_avro_json`."""
    names = schema.get("__named_schemas", {}) if names is None else names
    if isinstance(schema, str):
        if schema in names:
            return from_avro_json(value, names[schema], names)
        return value.encode("latin-1") if schema == "bytes" else value
    if isinstance(schema, list):
        if value is None:
            return None
        [(branch_name, inner)] = value.items()
        [branch] = [b for b in schema if _branch_name(b) == branch_name]
        return from_avro_json(inner, branch, names)
    kind = schema["type"]
    if kind == "record":
        return {
            f["name"]: from_avro_json(value[f["name"]], f["type"], names) for f in schema["fields"]
        }
    if kind == "array":
        return [from_avro_json(v, schema["items"], names) for v in value]
    if kind == "map":
        return {k: from_avro_json(v, schema["values"], names) for k, v in value.items()}
    if kind == "fixed":
        return value.encode("latin-1")
    if kind == "enum":
        return value
    return from_avro_json(value, kind, names)


def _branch_name(branch: Any) -> str:
    if isinstance(branch, str):
        return branch
    return str(branch.get("name") or _branch_name(branch["type"]))


@dataclass
class JavaSession:
    """Inputs written for the JVM and the output files it produced, by task key."""

    root: Path
    tasks: list[str] = field(default_factory=list)
    outputs: dict[str, Path] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)

    def decode(
        self, key: str, reader: SchemaVersion, messages: list[bytes], *writers: SchemaVersion
    ) -> None:
        """Java decodes ``messages`` (project-written) with ``reader``, knowing ``writers`` too."""
        hex_file = self.root / f"{key}.hex"
        hex_file.write_text("".join(m.hex() + "\n" for m in messages))
        out = self.root / f"{key}.out.json"
        extra = ",".join(str(w.path) for w in writers)
        self.tasks.append(f"decode\t{reader.path}\t{hex_file}\t{out}\t{extra}")
        self.outputs[key] = out
        self.inputs[key] = messages

    def encode(self, key: str, schema: SchemaVersion, records: list[dict[str, Any]]) -> None:
        """Java encodes ``records`` (given in Avro JSON) as single-object messages."""
        json_file = self.root / f"{key}.json"
        lines = [
            json.dumps(to_avro_json(r, schema.codec_schema), ensure_ascii=False) for r in records
        ]
        json_file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        out = self.root / f"{key}.out.hex"
        self.tasks.append(f"encode\t{schema.path}\t{json_file}\t{out}")
        self.outputs[key] = out
        self.inputs[key] = records

    def lines(self, key: str) -> list[str]:
        lines = self.outputs[key].read_text(encoding="utf-8").splitlines()
        errors = [line for line in lines if line.startswith("!ERROR")]
        assert not errors, f"Java failed on {len(errors)} message(s) of {key}: {errors[0]}"
        return lines

    def decoded(self, key: str, reader: SchemaVersion) -> list[dict[str, Any]]:
        """Java's decoded records, parsed from Avro JSON with the reader schema."""
        return [from_avro_json(json.loads(line), reader.codec_schema) for line in self.lines(key)]

    def encoded(self, key: str) -> list[bytes]:
        return [bytes.fromhex(line) for line in self.lines(key)]


@pytest.fixture(scope="module")
def java(avro_java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> JavaSession:
    session = JavaSession(tmp_path_factory.mktemp("avro-java"))
    catalogue: Catalogue = CATALOGUE
    for sv in catalogue:
        written = [
            AvroSerializer(sv.name, sv.version).encode(r) for r in examples(sv.name, sv.version)
        ]
        session.decode(f"decode-{_ids(sv)}", sv, written)
        session.encode(f"encode-{_ids(sv)}", sv, examples(sv.name, sv.version))
    for old, new in PAIRS:
        old_bytes = [
            AvroSerializer(old.name, old.version).encode(r) for r in examples(old.name, old.version)
        ]
        new_bytes = [
            AvroSerializer(new.name, new.version).encode(r) for r in examples(new.name, new.version)
        ]
        session.decode(f"backward-{_pair_id((old, new))}", new, old_bytes, old)
        session.decode(f"forward-{_pair_id((old, new))}", old, new_bytes, new)
    # Control: a reader that was not given the writer schema must refuse the message.
    transaction = catalogue.get("transaction")
    login = catalogue.get("login")
    session.decode(
        "control-unknown-schema",
        login,
        [AvroSerializer(transaction.name).encode(examples(transaction.name)[0])],
    )
    manifest = session.root / "manifest.tsv"
    manifest.write_text("\n".join(session.tasks) + "\n")
    done = subprocess.run(
        ["java", "-cp", avro_java_classpath, str(JAVA_SOURCE), str(manifest)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"AvroInterop.java failed:\n{done.stdout}\n{done.stderr}"
    return session


@pytest.mark.parametrize("sv", VERSIONS, ids=_ids)
def test_java_message_decoder_reads_what_the_project_writes(
    java: JavaSession, sv: SchemaVersion
) -> None:
    assert java.decoded(f"decode-{_ids(sv)}", sv) == examples(sv.name, sv.version)


@pytest.mark.parametrize("sv", VERSIONS, ids=_ids)
def test_project_reads_what_the_java_message_encoder_writes(
    java: JavaSession, sv: SchemaVersion
) -> None:
    messages = java.encoded(f"encode-{_ids(sv)}")
    for message in messages:
        # Java computed this fingerprint itself, from the schema file with its annotations.
        assert message[:2] == b"\xc3\x01"
        assert message[2:10] == sv.fingerprint
    decode = AvroDeserializer(sv.name, sv.version)
    assert decode.decode_many(messages) == examples(sv.name, sv.version)


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_java_reads_old_bytes_with_the_new_reader(
    java: JavaSession, pair: tuple[SchemaVersion, SchemaVersion]
) -> None:
    old, new = pair
    by_java = java.decoded(f"backward-{_pair_id(pair)}", new)
    by_project = AvroDeserializer(new.name, new.version).decode_many(
        java.inputs[f"backward-{_pair_id(pair)}"]
    )
    assert by_java == by_project
    old_fields = {f["name"] for f in old.parsed["fields"]}
    for record in by_java:
        for f in new.parsed["fields"]:
            if f["name"] not in old_fields:
                assert record[f["name"]] == f["default"]


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_java_reads_new_bytes_with_the_old_reader(
    java: JavaSession, pair: tuple[SchemaVersion, SchemaVersion]
) -> None:
    old, new = pair
    key = f"forward-{_pair_id(pair)}"
    by_java = java.decoded(key, old)
    assert by_java == AvroDeserializer(old.name, old.version).decode_many(java.inputs[key])
    old_fields = [f["name"] for f in old.parsed["fields"]]
    assert by_java == [{f: r[f] for f in old_fields} for r in examples(new.name, new.version)]


def test_java_refuses_a_message_whose_schema_it_was_not_given(java: JavaSession) -> None:
    [line] = java.outputs["control-unknown-schema"].read_text().splitlines()
    assert line.startswith("!ERROR org.apache.avro.message.MissingSchemaException"), line
    # and so does the project, given a catalogue without that schema
    message = java.inputs["control-unknown-schema"][0]
    only_login = Catalogue([CATALOGUE.get("login")])
    with pytest.raises(UnknownFingerprintError):
        AvroDeserializer("login", catalogue=only_login).decode(message)
