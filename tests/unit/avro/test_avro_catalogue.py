"""The schema catalogue: loading, naming rules, fingerprints."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.avro import Catalogue, SchemaError, load_catalogue
from shared.avro.catalogue import fingerprint

WriteSchemas = Callable[[dict[str, list[Any]]], Path]

REQUIRED = {
    "transaction": {
        "record_id": "string",
        "customer_id": "string",
        "event_time": "long",
        "amount": "double",
        "currency": "string",
        "merchant_id": "string",
        "country": "string",
    },
    "login": {
        "record_id": "string",
        "customer_id": "string",
        "event_time": "long",
        "country": "string",
        "ip": "string",
        "device_id": "string",
        "success": "boolean",
    },
}


def test_spec_fingerprint_of_null_is_little_endian_bytes() -> None:
    # Avro specification, "Schema Fingerprints": CRC-64-AVRO("null") = 7195948357588979594.
    fp = fingerprint("null")
    assert fp == bytes.fromhex("8a8f25cce724dd63")
    assert int.from_bytes(fp, "little") == 7195948357588979594


def test_fingerprint_ignores_docs_defaults_and_logical_types_but_not_types() -> None:
    base = {
        "type": "record",
        "name": "R",
        "namespace": "mesh",
        "fields": [{"name": "t", "type": "long"}],
    }
    decorated = {
        **base,
        "doc": "d",
        "fields": [
            {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}, "doc": "x"}
        ],
    }
    changed = {**base, "fields": [{"name": "t", "type": "int"}]}
    assert fingerprint(base) == fingerprint(decorated)
    assert fingerprint(base) != fingerprint(changed)


def test_real_catalogue_has_every_contract_schema(catalogue: Catalogue) -> None:
    expected = {
        "alert",
        "invalid_record",
        "login",
        "metric_snapshot",
        "notification",
        "transaction",
        "window_count",
    }
    assert expected <= set(catalogue.names())
    assert [sv.version for sv in catalogue.versions("transaction")][:2] == [1, 2]
    assert all(sv.full_name.startswith("mesh.") for sv in catalogue)
    assert len({sv.fingerprint for sv in catalogue}) == len(catalogue)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_raw_record_required_fields_are_required_in_every_version(
    catalogue: Catalogue, name: str
) -> None:
    for sv in catalogue.versions(name):
        fields = {f["name"]: f for f in sv.parsed["fields"]}
        for field_name, avro_type in REQUIRED[name].items():
            field = fields[field_name]
            ftype = field["type"]
            primitive = ftype["type"] if isinstance(ftype, dict) else ftype
            assert primitive == avro_type, f"{sv.label}.{field_name}"
            assert "default" not in field, f"{sv.label}.{field_name} must be required"
        event_time = fields["event_time"]["type"]
        assert event_time == {"type": "long", "logicalType": "timestamp-millis"}


def test_get_defaults_to_latest_and_refuses_unknown_names(catalogue: Catalogue) -> None:
    latest = catalogue.versions("transaction")[-1]
    assert catalogue.get("transaction") is latest
    assert catalogue.get("transaction", 1).version == 1
    with pytest.raises(SchemaError, match=r"'transactoin'.*alert, .*transaction"):
        catalogue.get("transactoin")
    with pytest.raises(SchemaError, match="no v99"):
        catalogue.get("transaction", 99)


def test_lookup_by_fingerprint_finds_each_version(catalogue: Catalogue) -> None:
    for sv in catalogue:
        assert catalogue.by_fingerprint(sv.fingerprint) is sv
    assert catalogue.by_fingerprint(b"\x00" * 8) is None


def test_load_catalogue_is_cached(schemas_dir: Path) -> None:
    assert load_catalogue(schemas_dir) is load_catalogue(str(schemas_dir))


def _thing(fields: list[dict[str, object]]) -> dict[str, object]:
    return {"type": "record", "name": "Thing", "namespace": "mesh", "fields": fields}


def test_missing_folder_is_a_schema_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="MESH_SCHEMAS_DIR"):
        Catalogue.load(tmp_path / "nope")


@pytest.mark.parametrize("filename", ["V1.avsc", "v0.avsc", "latest.avsc", "v1.0.avsc"])
def test_badly_named_files_are_refused(tmp_path: Path, filename: str) -> None:
    (tmp_path / "thing").mkdir()
    (tmp_path / "thing" / filename).write_text(json.dumps(_thing([])))
    with pytest.raises(SchemaError, match=r"v<N>\.avsc"):
        Catalogue.load(tmp_path)


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "thing").mkdir()
    (tmp_path / "thing" / "v1.avsc").write_text("{not json")
    with pytest.raises(SchemaError, match=r"v1\.avsc"):
        Catalogue.load(tmp_path)


def test_invalid_avro_is_refused(write_schemas: WriteSchemas) -> None:
    root = write_schemas({"thing": [_thing([{"name": "a", "type": "int", "default": "x"}])]})
    with pytest.raises(SchemaError, match="not a valid Avro schema"):
        Catalogue.load(root)


def test_top_level_must_be_a_record(write_schemas: WriteSchemas) -> None:
    root = write_schemas({"thing": ["string"]})
    with pytest.raises(SchemaError, match="must be a record"):
        Catalogue.load(root)


def test_union_default_must_match_first_branch(write_schemas: WriteSchemas) -> None:
    # fastavro accepts this, the Java library (and so Spark) does not.
    bad = _thing([{"name": "note", "type": ["string", "null"], "default": None}])
    with pytest.raises(SchemaError, match=r"Thing\.note: default null must match the first branch"):
        Catalogue.load(write_schemas({"thing": [bad]}))
    good = _thing([{"name": "note", "type": ["null", "string"], "default": None}])
    assert Catalogue.load(write_schemas({"thing": [good]})).get("thing").version == 1
