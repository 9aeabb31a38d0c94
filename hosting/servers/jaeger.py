"""A local Jaeger v2 for the mesh and the tests: the trace backend spans are exported to.

:class:`LocalJaeger` runs the binary built by :mod:`hosting.servers.jaeger_install` as an ordinary
:class:`~shared.local_process.LocalProcess` called ``jaeger``: config, log and pid file live in
``$MESH_HOME/jaeger/``. The config (rendered from ``infra/jaeger/config.yaml.template``) opens
listeners on 127.0.0.1 only: OTLP/HTTP on ``otlp_port`` and the UI with its HTTP API on
``ui_port`` (the next free port when one is busy; 0 = any free port, what tests use), the query
service's gRPC API on an ephemeral loopback port; nothing else (no OTLP/gRPC, no metrics port).
Traces are kept in memory, at most ``max_traces`` of them.

Reading traces back (the HTTP API the UI uses) is :mod:`shared.tracing.jaeger_api`; where the
running one listens, for the services, is :mod:`shared.endpoints`.

The UI address serves the folder ``ui_assets`` names (Jaeger's ``ui: assets_path``). A binary built
from the Go module has no jaeger-ui web build of its own (only a placeholder page) and no registry
the project reaches publishes one, so the default is the mesh's trace viewer in ``infra/jaeger/ui``
(static files over the same HTTP API: search by service, a trace as a span tree with timings and
attributes). A jaeger-ui build put into ``<cache>/jaeger/ui`` takes precedence when it is there.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path

from hosting.servers.jaeger_install import binary_path, installed
from hosting.servers.local_server import LocalServer
from hosting.servers.ports import first_free
from shared.endpoints import TRACE_BACKEND, BackendInfo, local_trace_backend, trace_backend_file
from shared.settings import PROJECT_ROOT, Settings
from shared.tracing.jaeger_api import BackendError, get_json

__all__ = ["LocalJaeger", "default_ui_assets", "render_config"]

HOST = "127.0.0.1"
NAME = TRACE_BACKEND
TEMPLATE = PROJECT_ROOT / "infra" / "jaeger" / "config.yaml.template"
#: The mesh's own trace viewer: plain static files, served by Jaeger as its UI.
VIEWER = PROJECT_ROOT / "infra" / "jaeger" / "ui"
#: Jaeger's usual ports, preferred by the local mesh so its UI is where people expect it.
OTLP_HTTP_PORT = 4318
UI_PORT = 16686
MAX_TRACES = 20_000
#: Environment variables the Collector/Jaeger read as configuration: not passed on.
_FOREIGN_ENV = ("OTEL_", "JAEGER_")


def default_ui_assets(settings: Settings, viewer: Path = VIEWER) -> Path | None:
    """What Jaeger serves as its UI: a jaeger-ui build in ``<cache>/jaeger/ui`` if one was put
    there, else the mesh's viewer; None (Jaeger's placeholder page) when neither has an
    ``index.html``, since Jaeger refuses to start on an assets folder without one."""
    for folder in (settings.cache / "jaeger" / "ui", viewer):
        if (folder / "index.html").is_file():
            return folder
    return None


def render_config(
    otlp_port: int | str,
    ui_port: int | str,
    *,
    max_traces: int = MAX_TRACES,
    ui_assets: Path | None = None,
    template: Path = TEMPLATE,
    host: str = HOST,
) -> str:
    """The Jaeger v2 YAML config: every listener on ``host`` (127.0.0.1), the given ports."""
    assets = ""
    if ui_assets is not None:
        assets = f"    ui:\n      assets_path: {json.dumps(str(ui_assets))}\n"
    return template.read_text().format(
        host=host, otlp_port=otlp_port, ui_port=ui_port, max_traces=max_traces, ui_assets=assets
    )


class LocalJaeger(LocalServer[BackendInfo]):
    """Start, find and stop the Jaeger whose files live in ``settings.home / "jaeger"``."""

    name = NAME
    program = "jaeger"
    error = BackendError
    foreign_env = _FOREIGN_ENV

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
        super().__init__(settings, start_timeout_s=start_timeout_s)
        self.otlp_port = otlp_port
        self.ui_port = ui_port
        self.max_traces = max_traces
        self.ui_assets = ui_assets if ui_assets is not None else default_ui_assets(settings)
        self.config_file = self.dir / "config.yaml"
        self.info_file = trace_backend_file(settings.home)

    def _launch_plan(self) -> tuple[list[str], BackendInfo]:
        binary = installed(self.settings)
        if binary is None:
            raise BackendError(
                "Jaeger is not installed: run `python -m hosting.servers.jaeger_install` "
                f"(builds it with Go into {binary_path(self.settings).parent})"
            )
        otlp_port = first_free(HOST, self.otlp_port)
        ui_port = first_free(HOST, self.ui_port, avoid={otlp_port})
        self.config_file.write_text(
            render_config(otlp_port, ui_port, max_traces=self.max_traces, ui_assets=self.ui_assets)
        )
        info = BackendInfo(f"http://{HOST}:{otlp_port}", f"http://{HOST}:{ui_port}")
        return [str(binary), "--config", str(self.config_file)], info

    def _ready(self, info: BackendInfo) -> bool:
        return _answers(info.ui_url + "/api/services") and _answers(info.otlp_endpoint + "/")

    def _describe(self, info: BackendInfo) -> str:
        return f"on {info.ui_url} and {info.otlp_endpoint}"

    def _published(self) -> BackendInfo | None:
        return local_trace_backend(self.settings)

    def _publish(self, info: BackendInfo) -> None:
        self.info_file.write_text(json.dumps(info.__dict__) + "\n")

    def _unpublish(self) -> None:
        self.info_file.unlink(missing_ok=True)


def _answers(url: str) -> bool:
    """Whether anything answers HTTP at ``url`` (any status counts)."""
    try:
        get_json(url, 1.0)
    except (OSError, http.client.HTTPException):
        return False
    return True
