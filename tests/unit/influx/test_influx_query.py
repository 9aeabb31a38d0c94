"""query(): InfluxDB's nested JSON as rows, and InfluxDB's error messages as exceptions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_influx import Answer, FakeInflux

from shared.influx.errors import InfluxError, InfluxQueryError
from testkit.influx_query import query, query_series


def answer(*results: dict[str, Any]) -> Answer:
    return Answer(200, json.dumps({"results": list(results)}))


def test_rows_are_dicts_by_column_with_group_by_tags_merged_in(fake_influx: FakeInflux) -> None:
    fake_influx.query_answers.append(
        answer(
            {
                "statement_id": 0,
                "series": [
                    {"name": "m", "tags": {"host": "a"}, "columns": ["time", "v"],
                     "values": [[1, 1.5], [2, 2.5]]},
                    {"name": "m", "tags": {"host": "b"}, "columns": ["time", "v"],
                     "values": [[1, 3.0]]},
                ],
            }
        )
    )  # fmt: skip
    rows = query(fake_influx.url, "db", "SELECT v FROM m GROUP BY host", epoch="ns")
    assert rows == [
        {"host": "a", "time": 1, "v": 1.5},
        {"host": "a", "time": 2, "v": 2.5},
        {"host": "b", "time": 1, "v": 3.0},
    ]
    request = fake_influx.requests[-1]
    assert (request.method, request.params) == (
        "GET",
        {"db": "db", "q": "SELECT v FROM m GROUP BY host", "epoch": "ns"},
    )


def test_series_keep_their_name(fake_influx: FakeInflux) -> None:
    fake_influx.query_answers.append(
        answer({"statement_id": 0, "series": [{"name": "measurements", "columns": ["name"],
                                               "values": [["cpu"], ["mem"]]}]})
    )  # fmt: skip
    [series] = query_series(fake_influx.url, "db", "SHOW MEASUREMENTS")
    assert (series.name, series.tags, series.rows) == (
        "measurements",
        {},
        [{"name": "cpu"}, {"name": "mem"}],
    )


def test_an_empty_answer_is_no_rows(fake_influx: FakeInflux) -> None:
    assert query(fake_influx.url, "db", "SELECT * FROM nothing") == []


def test_statements_that_change_something_are_posted(fake_influx: FakeInflux) -> None:
    query(fake_influx.url, "db", "CREATE DATABASE x")
    assert fake_influx.requests[-1].method == "POST"


def test_an_error_inside_a_result_raises_with_influx_words(fake_influx: FakeInflux) -> None:
    fake_influx.query_answers.append(answer({"statement_id": 0, "error": "database not found: db"}))
    with pytest.raises(InfluxQueryError, match="database not found: db"):
        query(fake_influx.url, "db", "SELECT * FROM m")


def test_a_400_with_an_error_raises_with_influx_words(fake_influx: FakeInflux) -> None:
    fake_influx.query_answers.append(Answer(400, '{"error":"error parsing query: found SELEC"}'))
    with pytest.raises(InfluxQueryError, match="found SELEC"):
        query(fake_influx.url, "db", "SELEC * FROM m")


def test_no_json_is_an_error_naming_the_status(fake_influx: FakeInflux) -> None:
    fake_influx.query_answers.append(Answer(502, "Bad Gateway"))
    with pytest.raises(InfluxQueryError, match="HTTP 502"):
        query(fake_influx.url, "db", "SELECT * FROM m")


def test_no_server_is_an_influx_error(fake_influx: FakeInflux) -> None:
    fake_influx.stop()
    with pytest.raises(InfluxError, match="did not answer"):
        query(fake_influx.url, "db", "SHOW DATABASES", timeout_s=2)
