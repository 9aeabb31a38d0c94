"""Reading InfluxDB back: InfluxQL in, rows out (for tests and the CLI, not for hot paths).

Why: InfluxDB's JSON nests rows in results -> series -> columns/values, and reports a bad
query as ``{"error": ...}`` inside a 200 answer as often as in a 400; callers want plain rows,
and an exception with InfluxDB's own words when something is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.influx.errors import InfluxError, InfluxQueryError
from shared.influx.transport import TRANSPORT_ERRORS, call

__all__ = ["Series", "query", "query_series"]

_READ_ONLY = ("SELECT", "SHOW")


@dataclass(frozen=True)
class Series:
    """One series of an answer: ``name`` (measurement, or e.g. ``measurements``), the tags it
    was grouped by, and its rows as ``{column: value}``."""

    name: str
    tags: dict[str, str]
    rows: list[dict[str, Any]]


def query(
    url: str, database: str, influxql: str, *, epoch: str | None = None, timeout_s: float = 10.0
) -> list[dict[str, Any]]:
    """Every row of every series, in InfluxDB's order, with the series' GROUP BY tags merged in.

    ``epoch="ns"`` (or ``"ms"``, ``"s"`` ...) returns ``time`` as an integer instead of RFC 3339.
    """
    series = query_series(url, database, influxql, epoch=epoch, timeout_s=timeout_s)
    return [{**s.tags, **row} for s in series for row in s.rows]


def query_series(
    url: str, database: str, influxql: str, *, epoch: str | None = None, timeout_s: float = 10.0
) -> list[Series]:
    """The series of every statement of ``influxql``; raises :class:`InfluxQueryError` with
    InfluxDB's message when it refuses any of them."""
    params = {"db": database, "q": influxql}
    if epoch:
        params["epoch"] = epoch
    # InfluxDB 1.x wants POST for statements that change something (CREATE, DROP ...).
    method = "GET" if influxql.lstrip().upper().startswith(_READ_ONLY) else "POST"
    try:
        response = call(method, url, "/query", params, timeout_s=timeout_s)
    except TRANSPORT_ERRORS as error:
        raise InfluxError(f"InfluxDB at {url} did not answer: {error}") from error
    try:
        answer = json.loads(response.body)
    except ValueError:
        raise InfluxQueryError(
            f"InfluxDB at {url} answered HTTP {response.status} without JSON: "
            f"{response.text()[:300]}"
        ) from None
    if "error" in answer:
        raise InfluxQueryError(f"InfluxDB refused {influxql!r}: {answer['error']}")
    found = []
    for result in answer.get("results", []):
        if "error" in result:
            raise InfluxQueryError(f"InfluxDB refused {influxql!r}: {result['error']}")
        for raw in result.get("series", []):
            columns = raw.get("columns", [])
            rows = [dict(zip(columns, values, strict=True)) for values in raw.get("values", [])]
            found.append(Series(raw.get("name", ""), dict(raw.get("tags") or {}), rows))
    return found


def records_in_per_instance(url: str, database: str, service: str) -> dict[str, int]:
    """Instance id -> the last ``records.in`` count the aggregator wrote for it: what each
    instance reported, to compare with what it counted itself."""
    rows = query(
        url,
        database,
        f'SELECT last("count") FROM "records.in" '
        f"WHERE scope='instance' AND service='{service}' GROUP BY instance",
    )
    return {row["instance"]: int(row["last"]) for row in rows}
