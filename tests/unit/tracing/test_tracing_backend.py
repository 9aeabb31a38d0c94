"""The Jaeger backend without running it: the config it is given, how its traces are read back,
and how the installer reports a missing Go or an unreachable module proxy."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from hosting.servers import jaeger_install
from hosting.servers.jaeger import render_config
from hosting.servers.jaeger_install import JaegerInstallError, binary_path, install, installed
from shared.settings import Settings
from shared.tracing.jaeger_api import normalise_trace


def _listeners(config: Any) -> Iterator[str]:
    """Every ``endpoint`` and ``host`` value anywhere in the config."""
    if isinstance(config, dict):
        for key, value in config.items():
            if key in ("endpoint", "host"):
                yield str(value)
            else:
                yield from _listeners(value)
    elif isinstance(config, list):
        for item in config:
            yield from _listeners(item)


def test_config_binds_every_listener_to_loopback_on_the_given_ports() -> None:
    config = yaml.safe_load(render_config(43180, 43190, max_traces=500))

    assert sorted(_listeners(config)) == ["127.0.0.1:0", "127.0.0.1:43180", "127.0.0.1:43190"]
    assert config["receivers"]["otlp"]["protocols"] == {"http": {"endpoint": "127.0.0.1:43180"}}
    assert config["extensions"]["jaeger_query"]["http"] == {"endpoint": "127.0.0.1:43190"}
    assert config["extensions"]["jaeger_query"]["enable_tracing"] is False


def test_config_runs_only_otlp_memory_storage_and_query_with_no_metrics_port() -> None:
    config = yaml.safe_load(render_config(1, 2, max_traces=500))
    service = config["service"]

    assert service["extensions"] == ["jaeger_storage", "jaeger_query"]
    assert service["pipelines"]["traces"] == {
        "receivers": ["otlp"],
        "processors": ["batch"],
        "exporters": ["jaeger_storage_exporter"],
    }
    assert service["telemetry"]["metrics"] == {"level": "none"}
    backends = config["extensions"]["jaeger_storage"]["backends"]
    assert backends == {"memstore": {"memory": {"max_traces": 500}}}
    assert "ui" not in config["extensions"]["jaeger_query"]


def test_config_points_the_ui_at_given_assets(tmp_path: Path) -> None:
    config = yaml.safe_load(render_config(1, 2, ui_assets=tmp_path / "ui dir"))

    assert config["extensions"]["jaeger_query"]["ui"] == {"assets_path": str(tmp_path / "ui dir")}


# One trace as Jaeger v2 (v1.76.0) returned it from /api/traces/<id>: two services, parent and
# child (captured, then ids and names shortened).
SAMPLE = json.loads("""
{"data": [{"traceID": "3f9ca5ec0e1b2b0f6a3c7d5ee2f4a9b1",
  "spans": [
    {"traceID": "3f9ca5ec0e1b2b0f6a3c7d5ee2f4a9b1", "spanID": "9b1e4c2d7a3f5e60",
     "operationName": "raw process",
     "references": [{"refType": "CHILD_OF", "traceID": "3f9ca5ec0e1b2b0f6a3c7d5ee2f4a9b1",
                     "spanID": "0a1b2c3d4e5f6071"}],
     "startTime": 1700000000002000, "duration": 150,
     "tags": [{"key": "messaging.kafka.offset", "type": "int64", "value": 42},
              {"key": "otel.scope.name", "type": "string", "value": "detector-mesh"},
              {"key": "span.kind", "type": "string", "value": "consumer"}],
     "logs": [], "processID": "p2", "warnings": null},
    {"traceID": "3f9ca5ec0e1b2b0f6a3c7d5ee2f4a9b1", "spanID": "0a1b2c3d4e5f6071",
     "operationName": "raw publish", "references": [],
     "startTime": 1700000000001000, "duration": 2000,
     "tags": [{"key": "otel.scope.name", "type": "string", "value": "detector-mesh"},
              {"key": "record.valid", "type": "bool", "value": true},
              {"key": "span.kind", "type": "string", "value": "producer"}],
     "logs": [], "processID": "p1", "warnings": null}],
  "processes": {
    "p1": {"serviceName": "ingest", "tags": [
      {"key": "service.instance.id", "type": "string", "value": "ingest-0"}]},
    "p2": {"serviceName": "detector.velocity", "tags": [
      {"key": "service.instance.id", "type": "string", "value": "detector-velocity-0"}]}},
  "warnings": null}],
 "total": 0, "limit": 0, "offset": 0, "errors": null}
""")


def test_trace_is_normalised_to_plain_spans_ordered_by_start() -> None:
    spans = normalise_trace(SAMPLE["data"][0])

    assert spans == [
        {
            "trace_id": "3f9ca5ec0e1b2b0f6a3c7d5ee2f4a9b1",
            "span_id": "0a1b2c3d4e5f6071",
            "parent_span_id": None,
            "name": "raw publish",
            "service": "ingest",
            "kind": "producer",
            "attributes": {"otel.scope.name": "detector-mesh", "record.valid": True},
            "resource": {"service.instance.id": "ingest-0"},
            "start_us": 1700000000001000,
            "duration_us": 2000,
        },
        {
            "trace_id": "3f9ca5ec0e1b2b0f6a3c7d5ee2f4a9b1",
            "span_id": "9b1e4c2d7a3f5e60",
            "parent_span_id": "0a1b2c3d4e5f6071",
            "name": "raw process",
            "service": "detector.velocity",
            "kind": "consumer",
            "attributes": {"messaging.kafka.offset": 42, "otel.scope.name": "detector-mesh"},
            "resource": {"service.instance.id": "detector-velocity-0"},
            "start_us": 1700000000002000,
            "duration_us": 150,
        },
    ]


def test_short_ids_are_padded_to_full_width() -> None:
    trace = {
        "spans": [{"traceID": "abc", "spanID": "1f", "operationName": "x", "processID": "p1"}],
        "processes": {"p1": {"serviceName": "s"}},
    }

    [span] = normalise_trace(trace)

    assert (span["trace_id"], span["span_id"]) == ("0" * 29 + "abc", "0" * 14 + "1f")
    assert span["kind"] == "internal"


class FakeGo:
    """Answers ``go mod download`` and ``go build`` like Go would, recording the calls."""

    def __init__(self, module_dir: Path, download: subprocess.CompletedProcess[str]) -> None:
        self.module_dir = module_dir
        self.download = download
        self.calls: list[tuple[list[str], Path | None]] = []

    def __call__(
        self, command: Sequence[str], env: Mapping[str, str], cwd: Path | None
    ) -> subprocess.CompletedProcess[str]:
        self.calls.append((list(command), cwd))
        if command[1] == "mod":
            return self.download
        output = Path(command[command.index("-o") + 1])
        output.write_text("#!/bin/sh\n")
        output.chmod(0o755)
        return subprocess.CompletedProcess(list(command), 0, "", "")


def _done(stdout: str = "", stderr: str = "", code: int = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess([], code, stdout, stderr)


def test_install_builds_the_module_from_its_folder_into_the_cache(tmp_path: Path) -> None:
    settings = Settings(cache=tmp_path, build_cache=tmp_path)
    go = FakeGo(tmp_path / "src", _done(json.dumps({"Dir": str(tmp_path / "src")})))

    path = install(settings, run=go, which=lambda _: "/usr/bin/go")

    assert path == binary_path(settings) == installed(settings)
    assert path == tmp_path / "jaeger" / jaeger_install.VERSION / "jaeger"
    (download, _), (build, build_dir) = go.calls
    assert download[1:] == ["mod", "download", "-json", f"{jaeger_install.MODULE}@v1.76.0"]
    assert build[1] == "build" and build[-1] == "./cmd/jaeger" and build_dir == tmp_path / "src"
    assert not list(path.parent.glob(".*partial"))

    assert install(settings, run=go, which=lambda _: None) == path  # installed: nothing runs
    assert len(go.calls) == 2


def test_go_environment_keeps_every_go_folder_in_the_cache(tmp_path: Path) -> None:
    env = jaeger_install.go_env(Settings(cache=tmp_path, build_cache=tmp_path))

    for name in ("GOBIN", "GOPATH", "GOCACHE", "GOMODCACHE"):
        assert Path(env[name]).is_relative_to(tmp_path), name
    assert env["GOTOOLCHAIN"] == "local"


def test_missing_go_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jaeger_install, "GO_FALLBACK", tmp_path / "no-go")

    with pytest.raises(JaegerInstallError, match=r"install Go 1\.24 or newer"):
        install(Settings(cache=tmp_path, build_cache=tmp_path), which=lambda _: None)


def test_unreachable_module_proxy_is_one_clear_line(tmp_path: Path) -> None:
    failed = _done(
        stderr="go: module github.com/jaegertracing/jaeger: Get "
        '"https://proxy.golang.org/github.com/jaegertracing/jaeger/@v/v1.76.0.info": '
        "dial tcp: lookup proxy.golang.org: no such host\n",
        code=1,
    )
    go = FakeGo(tmp_path, failed)

    with pytest.raises(JaegerInstallError, match="cannot reach the Go module proxy") as error:
        settings = Settings(cache=tmp_path, build_cache=tmp_path)
        install(settings, run=go, which=lambda _: "/usr/bin/go")

    assert "\n" not in str(error.value)
    assert installed(Settings(cache=tmp_path, build_cache=tmp_path)) is None
