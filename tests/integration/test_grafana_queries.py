"""Every query of infra/grafana/detector-mesh.json, run by a real InfluxDB 1.6 on mesh-shaped data.

The unit test checks the queries against the contract's names; this one checks that InfluxDB
accepts them once Grafana has interpolated them, and that the panels show the right numbers for
points shaped like the aggregator's (docs/metrics.md): two detectors with two instances each,
per-instance points (``scope=instance``) and their totals (``scope=all``, with ``instances`` and
``stale_instances``), and ingest's 1 s windows.

Grafana's interpolation is reproduced for what the dashboard uses: ``$timeFilter`` becomes a time
condition, ``$__interval`` a duration, and a multi-value variable with *All* a regex of its
regex-escaped values, ``(a|b)`` for several and ``a`` for one (so ``=~ /^$detector$/`` reads
``=~ /^(amount|velocity)$/``). *All* means every value the variable's own query returns, as in
Grafana.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared.influx.line_protocol import Point, encode_points
from shared.influx.transport import call
from testkit.influx_query import query

pytestmark = pytest.mark.integration

DASHBOARD_FILE = Path(__file__).resolve().parents[2] / "infra" / "grafana" / "detector-mesh.json"
TIME_FILTER = "time > now() - 1h"
INTERVAL_S = 10
STEPS = 6  # snapshots per instance, INTERVAL_S apart
WINDOWS = 20  # ingest windows, 1 s each

# Fields per metric type (docs/metrics.md); the unit test holds the dashboard to the same table.
METER = ("count", "m1_rate", "m5_rate", "m15_rate", "mean_rate")
HISTOGRAM = ("count", "min", "max", "mean", "stddev", "p50", "p75", "p95", "p98", "p99", "p999")


@dataclass(frozen=True)
class Instance:
    detector: str
    index: int
    live: bool
    records_per_s: float
    errors_per_s: float
    processing_p99_ms: float
    delay_p99_ms: float
    lag: int
    cpu_cores: float
    rss_bytes: int

    @property
    def service(self) -> str:
        return f"detector.{self.detector}"

    @property
    def id(self) -> str:
        return f"detector-{self.detector}-r1-{self.index}@build7:{4100 + self.index}:1795350000000"


INSTANCES = [
    Instance("velocity", 0, True, 40.0, 0.2, 3.0, 120.0, 7, 0.5, 200_000_000),
    Instance("velocity", 1, True, 60.0, 0.3, 5.0, 80.0, 3, 0.25, 300_000_000),
    Instance("amount", 0, True, 5.0, 0.1, 1.0, 50.0, 4, 0.125, 150_000_000),
    # Stale: its counts stay in the totals, its rates, gauges and percentiles drop out.
    Instance("amount", 1, False, 15.0, 0.4, 9.0, 900.0, 100, 2.0, 900_000_000),
]
DETECTORS = sorted({i.detector for i in INSTANCES})
INGEST = {  # (source topic, outcome) -> records per 1 s window
    ("raw.transactions", "valid"): 50,
    ("raw.transactions", "invalid"): 2,
    ("raw.customers", "valid"): 10,
    ("raw.customers", "invalid"): 1,
}


def _instance_fields(inst: Instance, step: int) -> dict[str, dict[str, float | int]]:
    """One instance's snapshot ``step`` (0, 1, ...), one fields dict per metric."""
    elapsed_s = 100 + step * INTERVAL_S  # counters started before the first snapshot
    records = round(inst.records_per_s * elapsed_s)

    def meter(count: int, rate: float) -> dict[str, float | int]:
        return {
            "count": count,
            "m1_rate": rate,
            "m5_rate": rate,
            "m15_rate": rate,
            "mean_rate": rate,
        }

    def histogram(p99: float) -> dict[str, float | int]:
        shares = {"p50": 0.2, "p75": 0.4, "p95": 0.8, "p98": 0.9, "p99": 1.0, "p999": 1.2}
        summary = {"count": records, "min": 0.1, "max": p99 * 1.5, "mean": p99 / 4}
        return {**summary, "stddev": p99 / 8, **{q: p99 * s for q, s in shares.items()}}

    return {
        "records.in": meter(records, inst.records_per_s),
        "records.out": meter(records // 10, inst.records_per_s / 10),
        "alerts": meter(records // 10, inst.records_per_s / 10),
        "errors": {"count": round(inst.errors_per_s * elapsed_s)},
        "dead_letters": {"count": round(inst.errors_per_s * elapsed_s)},
        "processing": {**meter(records, inst.records_per_s), **histogram(inst.processing_p99_ms)},
        "delay.end_to_end": histogram(inst.delay_p99_ms),
        "consumer.lag": {"value": inst.lag},
        "process.cpu_seconds": {"value": 3.0 + inst.cpu_cores * elapsed_s},
        "process.rss_bytes": {"value": inst.rss_bytes},
    }


def _total(metric: str, name: str, snapshots: list[tuple[Instance, dict]]) -> float | int:
    """The cross-instance rule of docs/metrics.md for one field of one metric."""
    if name == "count":  # every instance's latest count, stale ones included
        return sum(fields[metric][name] for _, fields in snapshots)
    live = [fields[metric] for inst, fields in snapshots if inst.live]
    if name == "min":
        return min(f[name] for f in live)
    if name == "max" or re.fullmatch(r"p\d+", name):  # percentiles: an upper bound
        return max(f[name] for f in live)
    if name == "mean":
        return sum(f["mean"] * f["count"] for f in live) / sum(f["count"] for f in live)
    if name == "stddev":  # pooled in the aggregator; the panels do not read it
        return max(f[name] for f in live)
    return sum(f[name] for f in live)  # rates and gauges: summed over live instances


def mesh_points(end_ns: int) -> list[Point]:
    """STEPS snapshots, INTERVAL_S apart, ending at ``end_ns``: every live instance's own points
    and the totals; the stale instance's one snapshot, 30 min earlier, whose counts stay in the
    totals; and ingest windows for the last WINDOWS seconds up to ``end_ns``."""
    points = []
    stale_ns = end_ns - 30 * 60 * 1_000_000_000
    for inst in INSTANCES:
        if not inst.live:
            tags = {"service": inst.service, "detector": inst.detector, "scope": "instance"}
            for metric, values in _instance_fields(inst, 0).items():
                points.append(Point(metric, {**tags, "instance": inst.id}, values, stale_ns))
    for step in range(STEPS):
        at_ns = end_ns - (STEPS - 1 - step) * INTERVAL_S * 1_000_000_000
        for detector in DETECTORS:
            snapshots = [
                (i, _instance_fields(i, step if i.live else 0))
                for i in INSTANCES
                if i.detector == detector
            ]
            common = {"service": f"detector.{detector}", "detector": detector}
            for inst, fields in snapshots:
                if inst.live:
                    for metric, values in fields.items():
                        tags = {**common, "scope": "instance", "instance": inst.id}
                        points.append(Point(metric, tags, values, at_ns))
            live = sum(inst.live for inst, _ in snapshots)
            for metric, values in snapshots[0][1].items():
                totals = {name: _total(metric, name, snapshots) for name in values}
                totals |= {"instances": live, "stale_instances": len(snapshots) - live}
                points.append(Point(metric, {**common, "scope": "all"}, totals, at_ns))
    for window in range(WINDOWS):
        at_ns = end_ns - window * 1_000_000_000
        for (topic, outcome), count in INGEST.items():
            tags = {"source_topic": topic, "outcome": outcome}
            points.append(Point("ingest.window", tags, {"count": count}, at_ns))
    return points


# --- Grafana's side ------------------------------------------------------------------------------


def regex_escape(value: str) -> str:
    """How Grafana escapes one value of a multi-value variable for an InfluxQL regex."""
    return re.sub(r"[\\^$*+?.()|{}\[\]/]", lambda m: "\\" + m.group(0), value)


def interpolate(text: str, chosen: dict[str, list[str]]) -> str:
    """``text`` as Grafana sends it to InfluxDB, with ``chosen`` values of each variable."""
    text = text.replace("$timeFilter", TIME_FILTER).replace("$__interval", f"{INTERVAL_S}s")
    for name, values in chosen.items():
        escaped = [regex_escape(v) for v in values]
        regex = escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"
        text = re.sub(rf"\$\{{{name}\}}|\[\[{name}\]\]|\${name}\b", lambda _m, r=regex: r, text)
    assert not re.search(r"\$\w|\[\[", text), f"a variable was left in {text!r}"
    return text


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD_FILE.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Mesh:
    url: str
    database: str
    end_ns: int

    def run(self, influxql: str) -> list[dict[str, Any]]:
        return query(self.url, self.database, influxql, epoch="ns")


@pytest.fixture(scope="module")
def mesh(influxdb: Any) -> Iterator[Mesh]:
    """A database of this module's own, with the points written."""
    database = f"grafana_{uuid.uuid4().hex[:8]}"
    query(influxdb.url, database, f'CREATE DATABASE "{database}"')
    # Snapshots on a 10 s boundary in the past, so each GROUP BY time(10s) bucket holds one.
    end_ns = (time.time_ns() // 10**10 - 1) * 10**10
    body = encode_points(mesh_points(end_ns)).encode()
    answer = call(
        "POST", influxdb.url, "/write", {"db": database, "precision": "ns"}, body=body, timeout_s=10
    )
    assert answer.status == 204, answer.text()
    try:
        yield Mesh(influxdb.url, database, end_ns)
    finally:
        query(influxdb.url, database, f'DROP DATABASE "{database}"')


@pytest.fixture(scope="module")
def all_values(dashboard: dict[str, Any], mesh: Mesh) -> dict[str, list[str]]:
    """What *All* stands for: each variable's values, from its own query, as Grafana does."""
    values = {}
    for variable in dashboard["templating"]["list"]:
        rows = mesh.run(interpolate(variable["query"], {}))
        values[variable["name"]] = sorted({row["value"] for row in rows})
    return values


def _panel_query(dashboard: dict[str, Any], title: str, ref_id: str = "A") -> str:
    (panel,) = [p for p in dashboard["panels"] if p["title"] == title]
    (target,) = [t for t in panel["targets"] if t["refId"] == ref_id]
    return target["query"]


def _by(rows: list[dict[str, Any]], tag: str, column: str) -> dict[str, set[Any]]:
    found: dict[str, set[Any]] = {}
    for row in rows:
        if row[column] is not None:
            found.setdefault(row[tag], set()).add(round(row[column], 6))
    return found


# --- the tests -----------------------------------------------------------------------------------


def test_variable_queries_list_the_detectors_and_services(all_values: dict[str, list[str]]):
    assert all_values["detector"] == ["amount", "velocity"]
    assert all_values["service"] == ["detector.amount", "detector.velocity"]


@pytest.mark.parametrize("selection", ["all", "one"])
def test_influxdb_accepts_every_panel_query(
    dashboard: dict[str, Any], mesh: Mesh, all_values: dict[str, list[str]], selection: str
):
    chosen = all_values if selection == "all" else {k: v[-1:] for k, v in all_values.items()}
    answered = {}
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            # query() raises InfluxQueryError with InfluxDB's words when it refuses one.
            rows = mesh.run(interpolate(target["query"], chosen))
            answered[f"{panel['title']} {target['refId']}"] = len(rows)
    assert len(answered) >= 12
    empty = [name for name, count in answered.items() if count == 0]
    assert not empty, f"no rows on mesh-shaped data: {empty}"


def test_records_per_second_per_detector_are_the_live_instances_rates(
    dashboard: dict[str, Any], mesh: Mesh, all_values: dict[str, list[str]]
):
    text = _panel_query(dashboard, "Records in/s per detector")
    rows = mesh.run(interpolate(text, all_values))
    assert _by(rows, "service", "mean") == {"detector.velocity": {100.0}, "detector.amount": {5.0}}
    one = mesh.run(interpolate(text, {**all_values, "detector": ["velocity"]}))
    assert {row["service"] for row in one} == {"detector.velocity"}


def test_errors_and_dead_letters_per_second_include_stale_instances_counts(
    dashboard: dict[str, Any], mesh: Mesh, all_values: dict[str, list[str]]
):
    for ref_id in ("A", "B"):
        text = _panel_query(dashboard, "Errors and dead letters/s per detector", ref_id)
        rows = mesh.run(interpolate(text, all_values))
        per_s = _by(rows, "service", "non_negative_derivative")
        assert per_s["detector.velocity"] == {0.5}
        # The stale instance's frozen count stays in the total: no drop, no negative rate.
        assert per_s["detector.amount"] == {0.1}


def test_latency_p99_is_the_largest_live_instance_p99(
    dashboard: dict[str, Any], mesh: Mesh, all_values: dict[str, list[str]]
):
    processing = mesh.run(
        interpolate(_panel_query(dashboard, "Processing time p99 per detector"), all_values)
    )
    assert _by(processing, "service", "max") == {
        "detector.velocity": {5.0},
        "detector.amount": {1.0},
    }
    delay = mesh.run(
        interpolate(_panel_query(dashboard, "End-to-end delay p99 per detector"), all_values)
    )
    assert _by(delay, "service", "max") == {"detector.velocity": {120.0}, "detector.amount": {50.0}}


def test_lag_now_and_instances_table(
    dashboard: dict[str, Any], mesh: Mesh, all_values: dict[str, list[str]]
):
    lag = mesh.run(
        interpolate(_panel_query(dashboard, "Consumer lag now, per detector"), all_values)
    )
    assert {row["service"]: row["last"] for row in lag} == {
        "detector.velocity": 10,
        "detector.amount": 4,
    }
    table = mesh.run(
        interpolate(_panel_query(dashboard, "Instances per service: live and stale"), all_values)
    )
    assert {row["service"]: (row["live"], row["stale"]) for row in table} == {
        "detector.velocity": (2, 0),
        "detector.amount": (1, 1),
    }


def test_cpu_and_memory_per_instance(
    dashboard: dict[str, Any], mesh: Mesh, all_values: dict[str, list[str]]
):
    cpu = mesh.run(interpolate(_panel_query(dashboard, "CPU per instance"), all_values))
    assert _by(cpu, "instance", "non_negative_derivative") == {
        i.id: {i.cpu_cores} for i in INSTANCES if i.live
    }
    one_service = {**all_values, "service": ["detector.velocity"]}
    memory = mesh.run(
        interpolate(_panel_query(dashboard, "Memory (RSS) per instance"), one_service)
    )
    assert _by(memory, "instance", "last") == {
        i.id: {i.rss_bytes} for i in INSTANCES if i.detector == "velocity"
    }


def test_ingest_valid_and_invalid_per_second(dashboard: dict[str, Any], mesh: Mesh):
    text = _panel_query(dashboard, "Ingest: valid and invalid records/s")
    rows = mesh.run(interpolate(text, {}))
    written = [row for row in rows if mesh.end_ns - WINDOWS * 10**9 < row["time"] <= mesh.end_ns]
    per_s = _by(written, "outcome", "sum")
    assert per_s == {"valid": {60}, "invalid": {3}}
    assert len(written) == 2 * WINDOWS
