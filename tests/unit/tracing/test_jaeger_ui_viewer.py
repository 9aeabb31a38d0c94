"""The trace viewer's pure functions, run by node on a trace shaped like Jaeger's ``/api/traces``.

The script (``infra/jaeger/ui/static/trace-viewer.js``) exports its DOM-free part when loaded as
a CommonJS module; a small driver calls it once and hands the results back as JSON. Skipped where
node is not installed: the integration test still checks that Jaeger serves the files.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

import pytest

from hosting.servers.jaeger import VIEWER

SCRIPT = VIEWER / "static" / "trace-viewer.js"
T0 = 1_800_000_000_000_000  # µs since the epoch: 2027-01-15 08:00:00 UTC
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT, CHILD, GRANDCHILD, ORPHAN = "a" * 16, "b" * 16, "c" * 16, "d" * 16

DRIVER = """
const fs = require("fs");
const v = require(process.argv[1]);
const trace = JSON.parse(fs.readFileSync(0, "utf8"));
const model = v.buildTree(trace);
const pick = ({spanID, depth, service, operation, kind, error, parentMissing, leftPct, widthPct,
               childCount}) => ({spanID, depth, service, operation, kind, error, parentMissing,
               leftPct, widthPct, childCount});
const summary = v.summarise(trace);
const now = %(now)d;
console.log(JSON.stringify({
  rows: model.rows.map(pick),
  depth: model.depth,
  summary,
  folded: v.renderTrace(model, {collapsed: {"%(root)s": true}}),
  openDetails: v.renderTrace(model, {open: {"%(child)s": true, "%(grandchild)s": true}}),
  results: v.renderResults([summary], now),
  noResults: v.renderResults([], now),
  routes: [
    v.parseRoute("#/trace/4BF92F3577B34DA6A3CE929D0E0E4736", "", ""),
    v.parseRoute("", "trace/4bf92f3577b34da6a3ce929d0e0e4736", ""),
    v.parseRoute("#/trace/not-hex", "", ""),
    v.parseRoute("#/search?service=detector.velocity&operation=raw%%20process&limit=5", "", ""),
    v.parseRoute("", "search", "?service=ingest"),
    v.parseRoute("", "", ""),
  ],
  query: v.searchQuery({service: "detector.velocity", lookback: "15m", limit: "5"}, now),
  badQuery: v.searchQuery({service: "ingest", lookback: "soon", limit: "99999"}, now),
  durations: [0, 850, 5423, 15700, 1234567, 123400000].map(v.formatDuration),
  time: v.formatTime(%(t0)d),
}));
"""


def _tag(key: str, value: Any) -> dict[str, Any]:
    kind = {str: "string", bool: "bool", int: "int64"}[type(value)]
    return {"key": key, "type": kind, "value": value}


def _span(span_id: str, parent: str | None, process: str, name: str, **more: Any) -> dict[str, Any]:
    """A span of Jaeger's JSON; ``start`` is µs after T0; ``tags`` and ``logs`` are optional."""
    parent_ref = {"refType": "CHILD_OF", "traceID": TRACE_ID, "spanID": parent}
    return {
        "traceID": TRACE_ID,
        "spanID": span_id,
        "operationName": name,
        "references": [] if parent is None else [parent_ref],
        "startTime": T0 + more["start"],
        "duration": more["duration"],
        "processID": process,
        "tags": more.get("tags", []),
        "logs": more.get("logs", []),
        "warnings": None,
    }


def _trace() -> dict[str, Any]:
    """ingest's root (1 ms) -> a detector's child (25-75 %, an error, a hostile attribute) ->
    its grandchild (with an event); plus a span whose parent never arrived, listed first."""
    consumer = _tag("span.kind", "consumer")
    child_tags = [
        consumer,
        _tag("messaging.kafka.offset", 42),
        _tag("note", "<script>alert(1)</script>"),
        _tag("otel.status_code", "ERROR"),
    ]
    event = {"timestamp": T0 + 550, "fields": [_tag("event", "rule fired")]}
    return {
        "traceID": TRACE_ID,
        "spans": [
            _span(ORPHAN, "e" * 16, "p2", "late publish", start=900, duration=100),
            _span(ROOT, None, "p1", "raw.card process", start=0, duration=1000, tags=[consumer]),
            _span(
                CHILD, ROOT, "p2", "records.card process", start=250, duration=500, tags=child_tags
            ),
            _span(GRANDCHILD, CHILD, "p2", "alerts publish", start=500, duration=100, logs=[event]),
        ],
        "processes": {
            "p1": {"serviceName": "ingest", "tags": []},
            "p2": {
                "serviceName": "detector.velocity",
                "tags": [_tag("service.instance.id", "detector-velocity-0")],
            },
        },
        "warnings": None,
    }


@pytest.fixture(scope="module")
def viewer() -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the viewer's functions are not run")
    now = T0 + 180_000_000  # three minutes after the trace
    driver = DRIVER % {"now": now, "t0": T0, "root": ROOT, "child": CHILD, "grandchild": GRANDCHILD}
    result = subprocess.run(
        [node, "-e", driver, str(SCRIPT)],
        input=json.dumps(_trace()),
        capture_output=True,
        text=True,
        env={"TZ": "UTC", "PATH": "/usr/bin:/bin"},
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_spans_form_a_tree_depth_first_with_orphans_kept_as_roots(viewer: dict[str, Any]) -> None:
    rows = viewer["rows"]

    assert [(r["spanID"], r["depth"]) for r in rows] == [
        (ROOT, 0),
        (CHILD, 1),
        (GRANDCHILD, 2),
        (ORPHAN, 0),
    ]
    assert [r["parentMissing"] for r in rows] == [False, False, False, True]
    assert [r["childCount"] for r in rows] == [1, 1, 0, 0]
    assert viewer["depth"] == 3


def test_timing_bars_are_relative_to_the_trace(viewer: dict[str, Any]) -> None:
    bars = [(r["leftPct"], r["widthPct"]) for r in viewer["rows"]]

    assert bars == [(0, 100), (25, 50), (50, 10), (90, 10)]


def test_service_kind_and_error_come_from_process_and_tags(viewer: dict[str, Any]) -> None:
    rows = {r["spanID"]: r for r in viewer["rows"]}

    assert (rows[ROOT]["service"], rows[ROOT]["kind"]) == ("ingest", "consumer")
    assert (rows[CHILD]["service"], rows[CHILD]["error"]) == ("detector.velocity", True)
    assert (rows[GRANDCHILD]["kind"], rows[GRANDCHILD]["error"]) == ("internal", False)


def test_summary_names_the_root_and_counts_spans_per_service(viewer: dict[str, Any]) -> None:
    assert viewer["summary"] == {
        "traceID": TRACE_ID,
        "rootService": "ingest",
        "rootName": "raw.card process",
        "spanCount": 4,
        "services": [{"name": "detector.velocity", "count": 3}, {"name": "ingest", "count": 1}],
        "durationUs": 1000,
        "startUs": T0,
        "errorCount": 1,
    }


def test_result_list_links_each_trace_and_shows_its_figures(viewer: dict[str, Any]) -> None:
    html = viewer["results"]

    assert f'href="#/trace/{TRACE_ID}"' in html
    assert "raw.card process" in html
    assert "2027-01-15 08:00:00.000" in html and "3 min ago" in html
    assert ">1ms<" in html
    assert "No traces found" in viewer["noResults"]


def test_folding_a_span_hides_its_subtree_only(viewer: dict[str, Any]) -> None:
    shown = re.findall(r'data-span="([0-9a-f]+)"', viewer["folded"])

    assert shown == [ROOT, ORPHAN]


def test_opened_spans_show_attributes_resource_and_events_escaped(viewer: dict[str, Any]) -> None:
    html = viewer["openDetails"]

    assert "messaging.kafka.offset" in html and ">42<" in html
    assert "service.instance.id" in html and "detector-velocity-0" in html
    assert "rule fired" in html and "+550µs" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in html
    assert html.count('class="details"') == 2


def test_routes_cover_hash_links_and_jaeger_ui_paths(viewer: dict[str, Any]) -> None:
    trace, path_trace, bad, search, path_search, empty = viewer["routes"]

    assert trace["view"] == path_trace["view"] == "trace"
    assert trace["traceID"] == path_trace["traceID"] == TRACE_ID
    assert bad["traceID"] is None
    assert search == {
        "view": "search",
        "params": {"service": "detector.velocity", "operation": "raw process", "limit": "5"},
    }
    assert path_search == {"view": "search", "params": {"service": "ingest"}}
    assert empty == {"view": "search", "params": {}}


def test_search_sends_start_and_end_since_jaeger_ignores_lookback(viewer: dict[str, Any]) -> None:
    now = T0 + 180_000_000
    query = dict(pair.split("=") for pair in viewer["query"].split("&"))
    fallback = dict(pair.split("=") for pair in viewer["badQuery"].split("&"))

    assert query == {
        "service": "detector.velocity",
        "start": str(now - 15 * 60_000_000),
        "end": str(now),
        "lookback": "15m",
        "limit": "5",
    }
    assert (fallback["lookback"], fallback["limit"]) == ("1h", "1500")
    assert int(fallback["end"]) - int(fallback["start"]) == 3_600_000_000


def test_durations_read_short(viewer: dict[str, Any]) -> None:
    assert viewer["durations"] == ["0µs", "850µs", "5.42ms", "15.7ms", "1.23s", "2m 3.4s"]
    assert viewer["time"] == "2027-01-15 08:00:00.000"
