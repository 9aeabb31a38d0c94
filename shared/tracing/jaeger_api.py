"""Reading traces back from Jaeger over the HTTP API its UI uses (``/api/traces/<id>``).

Each span is normalised to a plain dict, so tests and the demo's scorer do not depend on that
API's format::

    {"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex>" | None,
     "name": "orders process", "service": "detector.velocity", "kind": "consumer",
     "attributes": {"messaging.system": "kafka", ...}, "resource": {...},
     "start_us": 1700000000000000, "duration_us": 1234}

A client, not the server: the local Jaeger itself is started by the control plane
(:mod:`hosting.servers.jaeger`).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from shared.errors import MeshError

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class BackendError(MeshError):
    """The trace backend is not installed, did not start, or did not answer."""


def get_trace(ui_url: str, trace_id_hex: str, *, timeout_s: float = 5.0) -> list[dict[str, Any]]:
    """The spans of one trace, normalised (see the module doc); [] when Jaeger has none yet."""
    status, body = get_json(f"{ui_url}/api/traces/{trace_id_hex.lower()}", timeout_s)
    if status == 404:
        return []
    if status != 200:
        raise BackendError(f"Jaeger answered {status} for trace {trace_id_hex}: {body}")
    return [span for trace in body.get("data") or [] for span in normalise_trace(trace)]


def find_traces(
    ui_url: str,
    service: str,
    limit: int = 20,
    *,
    operation: str | None = None,
    since_s: float = 3600.0,
    timeout_s: float = 5.0,
) -> list[list[dict[str, Any]]]:
    """The latest traces (at most ``limit``) with a span of ``service`` (and ``operation``)
    started in the last ``since_s`` seconds, each a list of spans.

    The window is sent as ``start``/``end`` in µs: Jaeger's HTTP API ignores ``lookback`` and
    otherwise searches its default window."""
    now_us = int(time.time() * 1e6)
    params: dict[str, Any] = {
        "service": service,
        "limit": limit,
        "start": now_us - int(since_s * 1e6),
        "end": now_us,
    }
    if operation:
        params["operation"] = operation
    status, body = get_json(f"{ui_url}/api/traces?{urllib.parse.urlencode(params)}", timeout_s)
    if status != 200:
        raise BackendError(f"Jaeger answered {status} when searching {service!r}: {body}")
    return [normalise_trace(trace) for trace in body.get("data") or []]


def wait_for_trace(
    ui_url: str, trace_id_hex: str, *, min_spans: int = 1, timeout_s: float = 15.0
) -> list[dict[str, Any]]:
    """Poll until the trace has ``min_spans`` spans (export and batching take a moment)."""
    deadline = time.monotonic() + timeout_s
    spans: list[dict[str, Any]] = []
    while True:
        spans = get_trace(ui_url, trace_id_hex)
        if len(spans) >= min_spans or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    if len(spans) < min_spans:
        names = ", ".join(f"{s['service']}/{s['name']}" for s in spans) or "none"
        raise BackendError(
            f"trace {trace_id_hex} has {len(spans)} of {min_spans} spans in Jaeger after "
            f"{timeout_s:.0f} s (found: {names})"
        )
    return spans


def normalise_trace(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """One trace of Jaeger's ``/api/traces`` JSON as plain span dicts, ordered by start time."""
    processes = trace.get("processes") or {}
    spans = []
    for span in trace.get("spans") or []:
        process = span.get("process") or processes.get(span.get("processID"), {})
        attributes = _tags(span.get("tags"))
        kind = attributes.pop("span.kind", "internal")
        parent = next(
            (
                ref["spanID"]
                for ref in span.get("references") or []
                if ref.get("refType") == "CHILD_OF"
            ),
            None,
        )
        spans.append(
            {
                "trace_id": str(span["traceID"]).zfill(32),
                "span_id": str(span["spanID"]).zfill(16),
                "parent_span_id": None if parent is None else str(parent).zfill(16),
                "name": span.get("operationName", ""),
                "service": process.get("serviceName", ""),
                "kind": str(kind).lower(),
                "attributes": attributes,
                "resource": _tags(process.get("tags")),
                "start_us": int(span.get("startTime", 0)),
                "duration_us": int(span.get("duration", 0)),
            }
        )
    return sorted(spans, key=lambda s: (s["start_us"], s["span_id"]))


def _tags(tags: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {tag["key"]: tag.get("value") for tag in tags or []}


def get_json(url: str, timeout_s: float) -> tuple[int, Any]:
    """GET ``url`` without any proxy (Jaeger is on loopback); status and parsed JSON body
    (the raw text when it is not JSON). Transport failures raise OSError."""
    try:
        with _DIRECT.open(url, timeout=timeout_s) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        with error:
            status, raw = error.code, error.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", errors="replace").strip()
