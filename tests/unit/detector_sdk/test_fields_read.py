"""Which fields a detector reads, from the source of ``detect``: literal reads give a set, any
other use of the record gives "every field" and the line that made it so."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from shared.detector.fields_read import RUNTIME_FIELDS, fields_read
from shared.detector.loading import load_detector


@pytest.mark.parametrize(
    ("name", "own"),
    [
        ("large_amount", {"amount", "currency"}),
        ("velocity", set()),
        ("new_country", {"country"}),
    ],
)
def test_the_reference_detectors_read_their_literal_fields_and_the_alerts(
    name: str, own: set[str]
) -> None:
    found = fields_read(load_detector(f"detectors/{name}")[0].detect)
    assert found.fields == own | RUNTIME_FIELDS


def test_get_with_a_default_and_reads_inside_strings_and_lambdas_count() -> None:
    def detect(record: dict[str, Any], ctx: Any) -> Any:
        limit = record.get("limit", 10)
        label = f"{record['merchant']}"
        pick = (lambda: record["channel"])()
        return [limit, label, pick]

    assert fields_read(detect).fields == {"limit", "merchant", "channel"} | RUNTIME_FIELDS


def _score(record: dict[str, Any]) -> float:
    return float(record["amount"])


def _handed_on(record: dict[str, Any], ctx: Any) -> Any:
    return _score(record)


def _tested_with_in(record: dict[str, Any], ctx: Any) -> Any:
    return "amount" in record


def _key_not_literal(record: dict[str, Any], ctx: Any) -> Any:
    name = "amount"
    return record[name]


def _through_ctx(record: dict[str, Any], ctx: Any) -> Any:
    return ctx.record["amount"]


def _written(record: dict[str, Any], ctx: Any) -> Any:
    record["seen"] = True
    return record["seen"]


@pytest.mark.parametrize(
    ("detect", "why"),
    [
        (_handed_on, "uses `record` other than"),
        (_tested_with_in, "uses `record` other than"),
        (_key_not_literal, "uses `record` other than"),
        (_through_ctx, "reaches the record as `.record`"),
        (_written, "uses `record` other than"),
    ],
)
def test_any_other_use_of_the_record_means_every_field_and_says_where(
    detect: Any, why: str
) -> None:
    found = fields_read(detect)
    assert found.fields is None
    assert why in found.reason and "line " in found.reason
    assert found.describe().startswith("every field (line ")


def test_a_wrapped_function_or_one_without_source_means_every_field() -> None:
    @functools.wraps(_score)
    def wrapper(record: dict[str, Any], ctx: Any) -> Any:
        return _score(record)

    assert fields_read(wrapper).fields is None
    assert "wrapped" in fields_read(wrapper).reason
    built: dict[str, Any] = {}
    exec("def detect(record, ctx):\n    return record['amount']\n", built)  # no file behind it
    assert fields_read(built["detect"]).fields is None
    assert "source" in fields_read(built["detect"]).reason
