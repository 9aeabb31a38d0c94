"""Generator records as ``records.<type>`` Avro, until the ingest job produces them.

The ingest job (Spark) turns raw JSON into Avro records; tests and benchmarks of the detectors
must not wait for it, so this module does the same conversion for the generator's *valid*
records only: the schema's fields are taken from the JSON, optional ones default, and anything
the schema does not know goes into ``attributes`` (transactions) or is dropped (logins). The
ground truth travels along, so a test can compare alerts with the planted patterns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any, NamedTuple

from shared.avro import AvroSerializer, load_catalogue
from shared.detector import INPUT_TYPES
from tools.loadgen import RecordMeta, StreamConfig, generate


class FeedRecord(NamedTuple):
    record_type: str
    key: bytes
    record: dict[str, Any]
    meta: RecordMeta


@cache
def _fields(record_type: str) -> tuple[tuple[str, Any, bool], ...]:
    """(name, default, has_default) of the latest schema of ``record_type``."""
    schema = load_catalogue().get(INPUT_TYPES[record_type]).codec_schema
    return tuple((f["name"], f.get("default"), "default" in f) for f in schema["fields"])


def to_avro_record(record_type: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The latest-schema record for a valid raw JSON object of ``record_type``."""
    out: dict[str, Any] = {}
    for name, default, has_default in _fields(record_type):
        if name in raw:
            out[name] = raw[name]
        elif has_default:
            out[name] = {} if isinstance(default, dict) else default
        else:
            raise KeyError(f"raw {record_type} record lacks required field {name}")
    if "amount" in out and isinstance(out["amount"], int):
        out["amount"] = float(out["amount"])
    if "attributes" in out:
        known = {name for name, _, _ in _fields(record_type)}
        extra = {k: str(v) for k, v in raw.items() if k not in known}
        out["attributes"] = {**out["attributes"], **extra}
    return out


def valid_records(config: StreamConfig) -> Iterator[FeedRecord]:
    """The generator's valid records, converted, with their ground truth."""
    for generated in generate(config):
        meta = generated.meta
        if not meta.is_valid or generated.key is None:
            continue
        raw = json.loads(generated.value)
        yield FeedRecord(
            meta.record_type, generated.key, to_avro_record(meta.record_type, raw), meta
        )


def encoders() -> dict[str, AvroSerializer]:
    """One serializer per input type (latest schema version)."""
    return {t: AvroSerializer(schema) for t, schema in INPUT_TYPES.items()}
