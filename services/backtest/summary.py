"""What a backtest found, in numbers: records, alerts per rule, severity and day, speed.

Computed from the alerts as written (one small aggregation of the Parquet output, not a second
replay), kept as ``summary.json`` beside them and printed by the command line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

#: Days listed one by one when printing; a longer run prints its busiest and quietest days
#: (every day is in summary.json).
DAYS_LISTED = 14


@dataclass
class Summary:
    detector: str
    version: str
    inputs: list[str]
    date_from: str
    date_to: str
    #: Delta version of each input table the run read (``versionAsOf`` reruns the same rows).
    table_versions: dict[str, int]
    records: int
    failures: int
    first_failure: str
    seconds: float
    alerts: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)
    by_severity: dict[str, int] = field(default_factory=dict)
    by_day: dict[str, int] = field(default_factory=dict)
    output: str = ""
    #: The record fields read from the history (``every field (why)`` when not known).
    fields_read: str = ""
    compare: dict[str, Any] | None = None

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "records_per_s": round(self.records_per_s, 1)}


def count_alerts(summary: Summary, alerts: DataFrame) -> None:
    """Fill the alert counts of ``summary`` from the written alerts (one Spark job)."""
    day = F.date_format(F.col("event_time"), "yyyy-MM-dd")
    rows = alerts.groupBy("rule", "severity", day.alias("day")).count().collect()
    by_rule: dict[str, int] = {}
    by_severity: dict[str, int] = {}
    by_day: dict[str, int] = {}
    for row in rows:
        n = int(row["count"])
        by_rule[row["rule"]] = by_rule.get(row["rule"], 0) + n
        by_severity[row["severity"]] = by_severity.get(row["severity"], 0) + n
        by_day[row["day"]] = by_day.get(row["day"], 0) + n
    summary.alerts = sum(by_rule.values())
    summary.by_rule = dict(sorted(by_rule.items()))
    summary.by_severity = dict(sorted(by_severity.items()))
    summary.by_day = dict(sorted(by_day.items()))


def summary_lines(summary: Summary) -> list[str]:
    """The summary as the command line prints it."""
    versions = ", ".join(f"{t}@v{v}" for t, v in summary.table_versions.items())
    lines = [
        f"backtest {summary.detector} {summary.version} over {', '.join(summary.inputs)} "
        f"{summary.date_from} .. {summary.date_to} (history {versions})",
        f"  records    {summary.records:,} in {summary.seconds:.1f} s "
        f"({summary.records_per_s:,.0f} records/s); detect() failed on {summary.failures:,}",
    ]
    if summary.first_failure:
        lines.append(f"             first failure: {summary.first_failure}")
    if summary.fields_read:
        lines.append(f"  fields     {summary.fields_read}")
    lines.append(f"  alerts     {summary.alerts:,}")
    if summary.by_rule:
        lines.append("  by rule    " + _counts(summary.by_rule))
        lines.append("  severity   " + _counts(summary.by_severity))
        lines.append("  by day     " + _days(summary.by_day))
    if summary.output:
        lines.append(f"  written    {summary.output}")
    return lines


def _counts(counts: dict[str, int]) -> str:
    return "  ".join(f"{name} {n:,}" for name, n in counts.items())


def _days(by_day: dict[str, int]) -> str:
    if len(by_day) <= DAYS_LISTED:
        return "  ".join(f"{day} {n:,}" for day, n in by_day.items())
    busiest = max(by_day.items(), key=lambda item: item[1])
    quietest = min(by_day.items(), key=lambda item: item[1])
    return (
        f"{len(by_day)} days with alerts; busiest {busiest[0]} ({busiest[1]:,}), quietest "
        f"{quietest[0]} ({quietest[1]:,}); every day in summary.json"
    )
