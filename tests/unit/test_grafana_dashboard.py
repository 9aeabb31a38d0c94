"""infra/grafana/detector-mesh.json: a valid Grafana JSON model whose queries keep to the contract.

Two halves. The structure is what Grafana's dashboard import needs (required keys, unique panel
ids, a 24-column grid without overlaps, targets with unique refIds, data sources that resolve to
``__inputs``, template variables that are defined before they are used). The queries are checked
against docs/metrics.md, parsed here, because the doc is the contract: every measurement a query
reads is a metric name from the doc's tables (or ``ingest.window``), every field is a field of that
metric's type, every tag is one the schema writes, and every metric query pins ``scope`` so that
totals and per-instance points are never mixed.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_FILE = ROOT / "infra" / "grafana" / "detector-mesh.json"
METRICS_DOC = ROOT / "docs" / "metrics.md"

GRID_COLUMNS = 24
PANEL_TYPES = {"timeseries", "stat", "table"}
RESULT_FORMATS = {"time_series", "table", "logs"}
#: Variables Grafana itself provides to InfluxQL queries.
BUILTIN_VARIABLES = {"timeFilter", "__interval", "__interval_ms", "interval", "__range"}
REQUIRED_TOP_LEVEL = {
    "__inputs": list,
    "title": str,
    "uid": str,
    "schemaVersion": int,
    "version": int,
    "time": dict,
    "refresh": str,
    "templating": dict,
    "panels": list,
    "annotations": dict,
}


# --- the contract, from docs/metrics.md ---------------------------------------------------------


@dataclass(frozen=True)
class Contract:
    metric_types: dict[str, str]  # metric name -> counter/meter/histogram/timer/gauge
    type_fields: dict[str, frozenset[str]]
    scope_all_fields: frozenset[str]  # carried by scope=all points only
    metric_tags: frozenset[str]
    scopes: frozenset[str]
    ingest_measurement: str
    ingest_tags: frozenset[str]
    ingest_fields: frozenset[str]
    ingest_outcomes: frozenset[str]

    def measurements(self) -> set[str]:
        return {*self.metric_types, self.ingest_measurement}


def _backticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _tables(markdown: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every pipe table as (header cells, body rows), the separator row dropped."""
    tables = []
    block: list[list[str]] = []
    for line in [*markdown.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if len(block) >= 2:
            tables.append((block[0], [row for row in block[2:] if row]))
        block = []
    return tables


def _one(pattern: str, text: str) -> re.Match[str]:
    match = re.search(pattern, text, re.DOTALL)
    assert match, f"docs/metrics.md no longer says {pattern!r}: update this test with the contract"
    return match


def parse_contract(markdown: str) -> Contract:
    metric_types: dict[str, str] = {}
    type_cells: dict[str, str] = {}
    for header, rows in _tables(markdown):
        names = [h.lower() for h in header]
        if names[:2] == ["name", "type"]:
            for row in rows:
                (name,) = _backticked(row[0])
                metric_types[name] = row[1].strip().lower()
        elif names == ["type", "fields"]:
            type_cells.update({row[0].strip().lower(): row[1] for row in rows})

    def fields_of(kind: str, seen: tuple[str, ...] = ()) -> frozenset[str]:
        cell = type_cells[kind]
        fields = set(_backticked(cell))
        # "the meter's and the histogram's fields": a type made of other types' fields.
        for other in re.findall(r"(\w+)'s\b", cell):
            if other in type_cells and other not in seen:
                fields |= fields_of(other, (*seen, kind))
        return frozenset(fields)

    type_fields = {kind: fields_of(kind) for kind in type_cells}

    schema = _one(r"## InfluxDB schema(.*?)\n## ", markdown + "\n## ").group(1)
    tags = set(_backticked(_one(r"Tags = (.*?)\n\n", schema).group(1)))
    tags |= set(re.findall(r"plus `(\w+)=", schema))  # scope=instance plus `instance=<id>`
    tags |= set(re.findall(r"common tag `(\w+)=", markdown))  # detector=<name>
    scopes = frozenset(re.findall(r"`scope=(\w+)`", schema))
    scope_all = _one(r"`scope=all` points also carry (.*?)\.\n", schema).group(1)

    ingest = _one(r"Ingest windows: measurement `([^`]+)`, tags (.*?), field `(\w+)`", schema)
    ingest_tags = re.sub(r"\([^)]*\)", "", ingest.group(2))
    outcomes = _one(r"`outcome` \((.*?)\)", ingest.group(2)).group(1)

    return Contract(
        metric_types=metric_types,
        type_fields=type_fields,
        scope_all_fields=frozenset(_backticked(scope_all)),
        metric_tags=frozenset(tags),
        scopes=scopes,
        ingest_measurement=ingest.group(1),
        ingest_tags=frozenset(_backticked(ingest_tags)),
        ingest_fields=frozenset({ingest.group(3)}),
        ingest_outcomes=frozenset(_backticked(outcomes)),
    )


# --- InfluxQL, the subset a dashboard query uses -------------------------------------------------

_SELECT = re.compile(
    r"^\s*SELECT\s+(?P<select>.+?)\s+FROM\s+(?P<from>.+?)"
    r"(?:\s+WHERE\s+(?P<where>.+?))?(?:\s+GROUP\s+BY\s+(?P<group>.+?))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_SHOW_TAG_VALUES = re.compile(
    r'^\s*SHOW\s+TAG\s+VALUES(?:\s+FROM\s+(?P<from>"[^"]+"))?\s+WITH\s+KEY\s*=\s*"(?P<key>\w+)"'
    r"(?:\s+WHERE\s+(?P<where>.+?))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_QUOTED_MEASUREMENT = re.compile(r'^"((?:[^"\\]|\\.)+)"$')
_CONDITION = re.compile(
    r"""(?:"(?P<qkey>[^"]+)"|\b(?P<key>[A-Za-z_]\w*))\s*(?P<op>=~|!~|!=|<>|=)\s*"""
    r"""(?:'(?P<value>[^']*)'|/(?P<regex>(?:[^/\\]|\\.)*)/)"""
)
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)")


@dataclass(frozen=True)
class Variable:
    name: str
    multi_or_all: bool


def variables_used(query: str) -> set[str]:
    return {next(g for g in m.groups() if g) for m in _VARIABLE.finditer(query)}


def _measurement(text: str) -> str | None:
    match = _QUOTED_MEASUREMENT.match(text.strip())
    return match.group(1).replace('\\"', '"') if match else None


def _conditions(where: str) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (m.group("qkey") or m.group("key"), m.group("op"), m.group("value"), m.group("regex"))
        for m in _CONDITION.finditer(where)
    ]


def _selected_fields(select: str) -> tuple[set[str], list[str]]:
    """Fields a SELECT clause reads, and any bare (unquoted) identifiers, which are not allowed:
    a bare name is a field the check below could not see."""
    select = re.sub(r'\s+AS\s+"[^"]*"', "", select, flags=re.IGNORECASE)
    fields = set(re.findall(r'"([^"]+)"', select))
    rest = re.sub(r'"[^"]*"', " ", select)
    rest = re.sub(r"\b[A-Za-z_]\w*\s*\(", "(", rest)  # function names
    rest = re.sub(r"\$\w+|\b\d+(?:\.\d+)?[a-z]*\b", " ", rest)  # variables, numbers, durations
    return fields, re.findall(r"[A-Za-z_*]\w*|\*", rest)


def query_problems(query: str, contract: Contract, variables: dict[str, Variable]) -> list[str]:
    """What is wrong with one panel or variable query; [] when it keeps to the contract."""
    problems = [
        f"${name} is not a template variable of the dashboard"
        for name in sorted(variables_used(query) - set(variables) - BUILTIN_VARIABLES)
    ]
    for var in variables.values():
        uses = len(re.findall(rf"\$\{{?{var.name}\b|\[\[{var.name}\]\]", query))
        as_regex = query.count(f"=~ /^${var.name}$/")
        if var.multi_or_all and uses != as_regex:
            problems.append(
                f"${var.name} is multi-value or has All: Grafana interpolates it as a regex, "
                f"so it belongs in `=~ /^${var.name}$/`"
            )

    show = _SHOW_TAG_VALUES.match(query)
    if show:
        measurement = _measurement(show.group("from")) if show.group("from") else None
        if measurement is not None and measurement not in contract.measurements():
            problems.append(f"{measurement!r} is not a measurement of docs/metrics.md")
        known_tags = contract.metric_tags | contract.ingest_tags
        if show.group("key") not in known_tags:
            problems.append(f"tag {show.group('key')!r} is not written by the aggregator")
        return problems

    select = _SELECT.match(query)
    if not select:
        return [*problems, "not a SELECT ... FROM ... or SHOW TAG VALUES query"]
    measurement = _measurement(select.group("from"))
    if measurement is None:
        return [
            *problems,
            f"FROM {select.group('from')!r}: read one double-quoted measurement "
            '(unquoted, "records.in" would read measurement "in" of retention policy "records")',
        ]
    where = select.group("where") or ""
    if "$timeFilter" not in where:
        problems.append("the WHERE clause has no $timeFilter, so the time picker does nothing")
    fields, bare = _selected_fields(select.group("select"))
    if bare:
        problems.append(f"quote field names; bare identifiers in SELECT: {bare}")
    if not fields:
        problems.append("the query reads no field")
    conditions = _conditions(where)
    tag_keys = {key for key, *_ in conditions if key != "time"}
    tag_keys |= set(re.findall(r'"([^"]+)"', select.group("group") or ""))

    if measurement == contract.ingest_measurement:
        allowed_fields, allowed_tags = set(contract.ingest_fields), set(contract.ingest_tags)
        for key, _op, value, _regex in conditions:
            if key == "outcome" and value is not None and value not in contract.ingest_outcomes:
                problems.append(f"outcome {value!r} is none of {sorted(contract.ingest_outcomes)}")
    elif measurement in contract.metric_types:
        kind = contract.metric_types[measurement]
        allowed_fields, allowed_tags = set(contract.type_fields[kind]), set(contract.metric_tags)
        scopes = [value for key, op, value, _ in conditions if key == "scope" and op == "="]
        if len(scopes) != 1 or scopes[0] not in contract.scopes:
            problems.append(
                f"pin scope to one of {sorted(contract.scopes)} with \"scope\" = '...': "
                "without it totals and per-instance points are summed together"
            )
        elif scopes[0] == "all":
            allowed_fields |= contract.scope_all_fields
    else:
        return [*problems, f"{measurement!r} is not a metric name in docs/metrics.md"]

    problems += [
        f"{measurement!r} has no field {field!r} (its fields: {sorted(allowed_fields)})"
        for field in sorted(fields - allowed_fields)
    ]
    problems += [
        f"{measurement!r} has no tag {tag!r} (its tags: {sorted(allowed_tags)})"
        for tag in sorted(tag_keys - allowed_tags)
    ]
    return problems


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def contract() -> Contract:
    return parse_contract(METRICS_DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def variables(dashboard: dict[str, Any]) -> dict[str, Variable]:
    return {
        v["name"]: Variable(v["name"], bool(v.get("multi") or v.get("includeAll")))
        for v in dashboard["templating"]["list"]
    }


def _targets(dashboard: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(panel, target) for panel in dashboard["panels"] for target in panel["targets"]]


# --- the contract is parsed (so the checks below check something) -------------------------------


def test_metric_names_and_types_are_parsed_from_the_doc(contract: Contract) -> None:
    assert len(contract.metric_types) >= 10
    assert contract.metric_types["records.in"] == "meter"
    assert contract.metric_types["consumer.lag"] == "gauge"
    assert set(contract.metric_types.values()) <= set(contract.type_fields)


def test_fields_per_type_are_parsed_and_a_timer_has_the_meter_and_histogram_fields(
    contract: Contract,
) -> None:
    fields = contract.type_fields
    assert fields["counter"] == {"count"}
    assert fields["gauge"] == {"value"}
    assert {"m1_rate", "mean_rate"} <= fields["meter"]
    assert {"p99", "stddev"} <= fields["histogram"]
    assert fields["timer"] == fields["meter"] | fields["histogram"]


def test_tags_scopes_and_ingest_windows_are_parsed(contract: Contract) -> None:
    assert contract.metric_tags == {"service", "scope", "instance", "detector"}
    assert contract.scopes == {"all", "instance"}
    assert contract.scope_all_fields == {"instances", "stale_instances"}
    assert contract.ingest_measurement == "ingest.window"
    assert contract.ingest_tags == {"source_topic", "outcome"}
    assert contract.ingest_fields == {"count"}
    assert contract.ingest_outcomes == {"valid", "invalid", "late"}


# --- Grafana's JSON model ------------------------------------------------------------------------


def test_dashboard_has_the_top_level_keys_grafana_import_needs(dashboard: dict[str, Any]) -> None:
    for key, kind in REQUIRED_TOP_LEVEL.items():
        assert isinstance(dashboard.get(key), kind), f"{key} missing or not a {kind.__name__}"
    assert dashboard["title"].strip()
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", dashboard["uid"])
    assert dashboard["id"] is None, "an exported dashboard leaves id to the importing Grafana"
    assert dashboard["schemaVersion"] >= 36
    assert {"from", "to"} <= dashboard["time"].keys()
    assert isinstance(dashboard["templating"].get("list"), list)
    assert dashboard["panels"], "no panels"


def test_panels_have_unique_ids_a_known_type_and_a_title(dashboard: dict[str, Any]) -> None:
    ids = [panel.get("id") for panel in dashboard["panels"]]
    assert all(isinstance(i, int) for i in ids), ids
    assert len(ids) == len(set(ids)), f"duplicate panel ids: {ids}"
    for panel in dashboard["panels"]:
        assert panel.get("type") in PANEL_TYPES, panel.get("type")
        assert panel.get("title", "").strip(), f"panel {panel['id']} has no title"


def test_panels_fit_the_24_column_grid_without_overlapping(dashboard: dict[str, Any]) -> None:
    boxes = {}
    for panel in dashboard["panels"]:
        grid = panel.get("gridPos", {})
        x, y, w, h = (grid.get(k) for k in "xywh")
        assert all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y, w, h)), grid
        assert x >= 0 and y >= 0 and w >= 1 and h >= 1, f"panel {panel['id']}: {grid}"
        assert x + w <= GRID_COLUMNS, f"panel {panel['id']} is wider than the grid: {grid}"
        boxes[panel["id"]] = (x, y, w, h)
    for (a, (ax, ay, aw, ah)), (b, (bx, by, bw, bh)) in itertools.combinations(boxes.items(), 2):
        overlap = ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah
        assert not overlap, f"panels {a} and {b} overlap"


def test_every_target_is_a_raw_influxql_query_with_a_refid_unique_in_its_panel(
    dashboard: dict[str, Any],
) -> None:
    for panel in dashboard["panels"]:
        targets = panel.get("targets")
        assert targets, f"panel {panel['id']} has no targets"
        ref_ids = [t.get("refId") for t in targets]
        assert all(isinstance(r, str) and r for r in ref_ids), ref_ids
        assert len(ref_ids) == len(set(ref_ids)), f"panel {panel['id']}: refIds {ref_ids}"
        for target in targets:
            assert isinstance(target.get("query"), str) and target["query"].strip()
            assert target.get("rawQuery") is True, f"panel {panel['id']} {target['refId']}"
            assert target.get("resultFormat") in RESULT_FORMATS


def test_every_datasource_reference_resolves_to_an_input(dashboard: dict[str, Any]) -> None:
    inputs = {
        i["name"]: i["pluginId"] for i in dashboard["__inputs"] if i.get("type") == "datasource"
    }
    assert inputs, "no datasource in __inputs: Grafana's import would not ask for one"
    references = [("panel", p["id"], p.get("datasource")) for p in dashboard["panels"]]
    references += [("target", p["id"], t.get("datasource")) for p, t in _targets(dashboard)]
    references += [
        ("variable", v["name"], v.get("datasource")) for v in dashboard["templating"]["list"]
    ]
    used = set()
    for what, which, ref in references:
        assert isinstance(ref, dict), f"{what} {which}: datasource {ref!r} is not a reference"
        match = re.fullmatch(r"\$\{(\w+)\}", ref.get("uid", ""))
        assert match and match.group(1) in inputs, f"{what} {which}: {ref} is not an input"
        assert ref.get("type") == inputs[match.group(1)], f"{what} {which}: {ref}"
        used.add(match.group(1))
    assert used == set(inputs), f"unused inputs: {set(inputs) - used}"


def test_template_variables_are_unique_query_variables(dashboard: dict[str, Any]) -> None:
    names = [v.get("name") for v in dashboard["templating"]["list"]]
    assert len(names) == len(set(names)), names
    assert {"detector", "service"} <= set(names)
    for variable in dashboard["templating"]["list"]:
        assert variable.get("type") == "query"
        assert isinstance(variable.get("query"), str) and variable["query"].strip()


def test_every_variable_a_query_uses_is_defined(
    dashboard: dict[str, Any], variables: dict[str, Variable]
) -> None:
    queries = [t["query"] for _, t in _targets(dashboard)]
    queries += [v["query"] for v in dashboard["templating"]["list"]]
    used = set().union(*map(variables_used, queries))
    assert {"detector", "service", "timeFilter"} <= used
    assert used - BUILTIN_VARIABLES <= set(variables)


# --- the queries keep to docs/metrics.md ---------------------------------------------------------


def test_every_panel_query_reads_contract_measurements_fields_and_tags(
    dashboard: dict[str, Any], contract: Contract, variables: dict[str, Variable]
) -> None:
    problems = {
        f"panel {panel['id']} ({panel['title']}) {target['refId']}": found
        for panel, target in _targets(dashboard)
        if (found := query_problems(target["query"], contract, variables))
    }
    assert not problems, json.dumps(problems, indent=2)


def test_every_variable_query_reads_contract_measurements_and_tags(
    dashboard: dict[str, Any], contract: Contract, variables: dict[str, Variable]
) -> None:
    for variable in dashboard["templating"]["list"]:
        assert query_problems(variable["query"], contract, variables) == [], variable["name"]


def test_the_dashboard_reads_the_measurements_it_promises(
    dashboard: dict[str, Any], contract: Contract
) -> None:
    read = {
        _measurement(m.group("from"))
        for _, t in _targets(dashboard)
        if (m := _SELECT.match(t["query"]))
    }
    expected = {
        "records.in",
        "consumer.lag",
        "alerts",
        "errors",
        "dead_letters",
        "processing",
        "delay.end_to_end",
        "process.cpu_seconds",
        "process.rss_bytes",
        contract.ingest_measurement,
    }
    assert expected <= read, f"not on the dashboard: {expected - read}"


@pytest.mark.parametrize(
    ("query", "complaint"),
    [
        (
            'SELECT mean("m1_rate") FROM "records.out.total" WHERE "scope" = \'all\' '
            "AND $timeFilter",
            "not a metric name",
        ),
        ('SELECT mean("p99") FROM "records.in" WHERE "scope" = \'all\' AND $timeFilter', "p99"),
        ('SELECT last("value") FROM "consumer.lag" WHERE $timeFilter', "pin scope"),
        (
            'SELECT last("instances") FROM "alerts" WHERE "scope" = \'instance\' AND $timeFilter',
            "instances",
        ),
        ('SELECT mean(m1_rate) FROM "alerts" WHERE "scope" = \'all\' AND $timeFilter', "bare"),
        ('SELECT mean("m1_rate") FROM records.in WHERE "scope" = \'all\' AND $timeFilter', "FROM"),
        ('SELECT mean("m1_rate") FROM "alerts" WHERE "scope" = \'all\'', "$timeFilter"),
        (
            'SELECT mean("m1_rate") FROM "alerts" WHERE "scope" = \'all\' '
            "AND \"detector\" = '$detector' AND $timeFilter",
            "=~ /^$detector$/",
        ),
        (
            'SELECT mean("m1_rate") FROM "alerts" WHERE "scope" = \'all\' '
            'AND "host" =~ /^$host$/ AND $timeFilter',
            "$host is not a template variable",
        ),
        (
            'SELECT sum("count") FROM "ingest.window" WHERE "outcome" = \'rejected\' '
            'AND $timeFilter GROUP BY time(1s), "topic"',
            "rejected",
        ),
        ('SHOW TAG VALUES FROM "records.in" WITH KEY = "pod"', "pod"),
    ],
)
def test_query_check_reports_what_breaks_the_contract(
    query: str, complaint: str, contract: Contract, variables: dict[str, Variable]
) -> None:
    problems = query_problems(query, contract, variables)
    assert any(complaint in p for p in problems), problems
