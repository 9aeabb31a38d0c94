"""A local Jaeger v2 for the mesh and the tests: the trace backend spans are exported to.

:class:`LocalJaeger` runs the binary built by :mod:`shared.tracing.jaeger_install` as an ordinary
:class:`~shared.local_process.LocalProcess` called ``jaeger``: config, log and pid file live in
``$MESH_HOME/jaeger/``. The config (rendered from ``infra/jaeger/config.yaml.template``) opens
listeners on 127.0.0.1 only: OTLP/HTTP on ``otlp_port`` and the UI with its HTTP API on
``ui_port`` (the next free port when one is busy; 0 = any free port, what tests use), the query
service's gRPC API on an ephemeral loopback port; nothing else (no OTLP/gRPC, no metrics port).
Traces are kept in memory, at most ``max_traces`` of them.

The query helpers read traces back over the HTTP API the Jaeger UI uses (``/api/traces/<id>``)
and normalise each span to a plain dict, so tests do not depend on that API's format::

    {"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex>" | None,
     "name": "orders process", "service": "detector.velocity", "kind": "consumer",
     "attributes": {"messaging.system": "kafka", ...}, "resource": {...},
     "start_us": 1700000000000000, "duration_us": 1234}

The UI address serves the folder ``ui_assets`` names (Jaeger's ``ui: assets_path``). A binary built
from the Go module has no jaeger-ui web build of its own (only a placeholder page) and no registry
the project reaches publishes one, so the default is the mesh's trace viewer in ``infra/jaeger/ui``
(static files over the same HTTP API: search by service, a trace as a span tree with timings and
attributes). A jaeger-ui build put into ``<cache>/jaeger/ui`` takes precedence when it is there.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.errors import MeshError
from shared.file_lock import folder_lock
from shared.kafka.ports import first_free
from shared.local_process import LocalProcess
from shared.settings import PROJECT_ROOT, Settings
from shared.tracing.jaeger_install import installed

__all__ = [
    "BackendError",
    "BackendInfo",
    "LocalJaeger",
    "default_ui_assets",
    "find_traces",
    "get_trace",
    "normalise_trace",
    "render_config",
    "wait_for_trace",
]

HOST = "127.0.0.1"
NAME = "jaeger"
TEMPLATE = PROJECT_ROOT / "infra" / "jaeger" / "config.yaml.template"
#: The mesh's own trace viewer: plain static files, served by Jaeger as its UI.
VIEWER = PROJECT_ROOT / "infra" / "jaeger" / "ui"
#: Jaeger's usual ports, preferred by the local mesh so its UI is where people expect it.
OTLP_HTTP_PORT = 4318
UI_PORT = 16686
MAX_TRACES = 20_000
#: Environment variables the Collector/Jaeger read as configuration: not passed on.
_FOREIGN_ENV = ("OTEL_", "JAEGER_")
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def default_ui_assets(settings: Settings, viewer: Path = VIEWER) -> Path | None:
    """What Jaeger serves as its UI: a jaeger-ui build in ``<cache>/jaeger/ui`` if one was put
    there, else the mesh's viewer; None (Jaeger's placeholder page) when neither has an
    ``index.html``, since Jaeger refuses to start on an assets folder without one."""
    for folder in (settings.cache / "jaeger" / "ui", viewer):
        if (folder / "index.html").is_file():
            return folder
    return None


class BackendError(MeshError):
    """The trace backend is not installed, did not start, or did not answer."""


@dataclass(frozen=True)
class BackendInfo:
    """Where the running trace backend listens."""

    #: OTLP/HTTP base URL: set it as MESH_OTLP_ENDPOINT (spans go to ``<it>/v1/traces``).
    otlp_endpoint: str
    #: Jaeger UI and its HTTP API.
    ui_url: str


def render_config(
    otlp_port: int,
    ui_port: int,
    *,
    max_traces: int = MAX_TRACES,
    ui_assets: Path | None = None,
    template: Path = TEMPLATE,
) -> str:
    """The Jaeger v2 YAML config: every listener on 127.0.0.1, the given ports."""
    assets = ""
    if ui_assets is not None:
        assets = f"    ui:\n      assets_path: {json.dumps(str(ui_assets))}\n"
    return template.read_text().format(
        host=HOST, otlp_port=otlp_port, ui_port=ui_port, max_traces=max_traces, ui_assets=assets
    )


class LocalJaeger:
    """Start, find and stop the Jaeger whose files live in ``settings.home / "jaeger"``."""

    def __init__(
        self,
        settings: Settings,
        *,
        otlp_port: int = OTLP_HTTP_PORT,
        ui_port: int = UI_PORT,
        max_traces: int = MAX_TRACES,
        ui_assets: Path | None = None,
        start_timeout_s: float = 30.0,
    ) -> None:
        self.settings = settings
        self.otlp_port = otlp_port
        self.ui_port = ui_port
        self.max_traces = max_traces
        self.ui_assets = ui_assets if ui_assets is not None else default_ui_assets(settings)
        self.start_timeout_s = start_timeout_s
        self.process = LocalProcess(NAME, settings.home)
        self.dir = self.process.dir
        self.config_file = self.dir / "config.yaml"
        self.info_file = self.dir / "endpoints.json"

    def running(self) -> BackendInfo | None:
        """Where our Jaeger listens if its process is alive (it may still be starting)."""
        if self.process.running() is None:
            return None
        try:
            return BackendInfo(**json.loads(self.info_file.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def start(self) -> BackendInfo:
        """Start unless running, wait until it accepts OTLP and answers queries; its endpoints.

        Idempotent and safe from two processes at once: ports, config and endpoints file are
        chosen and written under a lock by the caller that starts Jaeger.
        """
        started = False
        with folder_lock(self.dir / "starting", BackendError):
            info = self.running()
            if info is None:
                info, started = self._launch()
        try:
            self._wait_ready(info)
        except BaseException:
            if started:
                self.stop(timeout=5)
            raise
        return info

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop our Jaeger (SIGTERM, then SIGKILL after ``timeout``); False if none ran."""
        stopped = self.process.stop(timeout)
        self.info_file.unlink(missing_ok=True)
        return stopped is not None

    def tail_log(self, lines: int = 10) -> str:
        return " | ".join(self.process.tail_log(lines)) or "(no log)"

    def _launch(self) -> tuple[BackendInfo, bool]:
        binary = installed(self.settings)
        if binary is None:
            raise BackendError(
                "Jaeger is not installed: run `python -m shared.tracing.jaeger_install` "
                "(builds it with Go into .cache/jaeger/)"
            )
        otlp_port = first_free(HOST, self.otlp_port)
        ui_port = first_free(HOST, self.ui_port, avoid={otlp_port})
        self.config_file.write_text(
            render_config(otlp_port, ui_port, max_traces=self.max_traces, ui_assets=self.ui_assets)
        )
        info = BackendInfo(f"http://{HOST}:{otlp_port}", f"http://{HOST}:{ui_port}")
        self.info_file.write_text(json.dumps(info.__dict__) + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_ENV)}
        _, started = self.process.start([str(binary), "--config", str(self.config_file)], env)
        return info, started

    def _wait_ready(self, info: BackendInfo) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.running() is None:
                raise BackendError(
                    f"jaeger exited while starting; last lines of {self.process.log_file}: "
                    f"{self.tail_log()}"
                )
            if _answers(info.ui_url + "/api/services") and _answers(info.otlp_endpoint + "/"):
                return
            time.sleep(0.1)
        raise BackendError(
            f"jaeger did not answer on {info.ui_url} and {info.otlp_endpoint} within "
            f"{self.start_timeout_s:.0f} s; last lines of {self.process.log_file}: "
            f"{self.tail_log()}"
        )


def get_trace(ui_url: str, trace_id_hex: str, *, timeout_s: float = 5.0) -> list[dict[str, Any]]:
    """The spans of one trace, normalised (see the module doc); [] when Jaeger has none yet."""
    status, body = _get_json(f"{ui_url}/api/traces/{trace_id_hex.lower()}", timeout_s)
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
    status, body = _get_json(f"{ui_url}/api/traces?{urllib.parse.urlencode(params)}", timeout_s)
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


def _answers(url: str) -> bool:
    """Whether anything answers HTTP at ``url`` (any status counts)."""
    try:
        _get_json(url, 1.0)
    except (OSError, http.client.HTTPException):
        return False
    return True


def _get_json(url: str, timeout_s: float) -> tuple[int, Any]:
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


def resolve_otlp_endpoint(settings: Settings) -> str:
    """Where the mesh's services send spans: MESH_OTLP_ENDPOINT, else the local Jaeger if it
    runs (``mesh up`` starts it when built), else "" (tracing off)."""
    if settings.otlp_endpoint:
        return settings.otlp_endpoint
    info = LocalJaeger(settings).running()
    return info.otlp_endpoint if info is not None else ""
