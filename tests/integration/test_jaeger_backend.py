"""The local Jaeger v2 as a trace backend: spans exported with the mesh's own OTLP/HTTP setup come
back from its HTTP API as one trace, and Jaeger listens on loopback only. No Kafka is involved.
"""

from __future__ import annotations

import re
import urllib.request
import uuid
from pathlib import Path

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from hosting.servers.jaeger import default_ui_assets
from hosting.servers.jaeger_install import VERSION
from shared.endpoints import BackendInfo
from shared.settings import Settings
from shared.tracing import TracingConfig, setup_tracing
from shared.tracing.jaeger_api import find_traces, get_trace, wait_for_trace

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def test_two_services_spans_come_back_as_one_trace_with_parent_link(jaeger: BackendInfo) -> None:
    suffix = uuid.uuid4().hex[:8]
    config = TracingConfig(endpoint=jaeger.otlp_endpoint, sample_ratio=1.0)
    ingest = setup_tracing(f"ingest-{suffix}", "ingest-0", "1.2.3", Settings(), config=config)
    detector = setup_tracing(
        f"detector.velocity-{suffix}", "detector-velocity-0", "1.2.3", Settings(), config=config
    )
    try:
        with (
            ingest.tracer.start_as_current_span(
                "raw publish",
                kind=SpanKind.PRODUCER,
                attributes={"messaging.system": "kafka", "record.valid": True},
            ) as parent,
            detector.tracer.start_as_current_span(
                "raw process",
                kind=SpanKind.CONSUMER,
                attributes={"messaging.kafka.offset": 42, "messaging.destination.name": "raw"},
            ) as child,
        ):
            pass
        assert ingest.flush(5) and detector.flush(5)
    finally:
        ingest.shutdown(5)
        detector.shutdown(5)
    trace_id = trace.format_trace_id(parent.get_span_context().trace_id)
    parent_id = trace.format_span_id(parent.get_span_context().span_id)
    child_id = trace.format_span_id(child.get_span_context().span_id)

    spans = {s["span_id"]: s for s in wait_for_trace(jaeger.ui_url, trace_id, min_spans=2)}

    assert set(spans) == {parent_id, child_id}
    assert {s["trace_id"] for s in spans.values()} == {trace_id}
    assert spans[parent_id]["parent_span_id"] is None
    assert spans[child_id]["parent_span_id"] == parent_id
    assert spans[parent_id]["service"] == f"ingest-{suffix}"
    assert spans[child_id]["service"] == f"detector.velocity-{suffix}"
    assert (spans[parent_id]["name"], spans[parent_id]["kind"]) == ("raw publish", "producer")
    assert (spans[child_id]["name"], spans[child_id]["kind"]) == ("raw process", "consumer")
    assert spans[parent_id]["attributes"]["messaging.system"] == "kafka"
    assert spans[parent_id]["attributes"]["record.valid"] is True
    assert spans[child_id]["attributes"]["messaging.kafka.offset"] == 42
    assert spans[child_id]["resource"]["service.instance.id"] == "detector-velocity-0"
    assert spans[child_id]["resource"]["service.version"] == "1.2.3"

    found = find_traces(jaeger.ui_url, f"detector.velocity-{suffix}", limit=5)
    assert [[s["span_id"] for s in t] for t in found] == [[parent_id, child_id]]
    service = f"detector.velocity-{suffix}"
    assert find_traces(jaeger.ui_url, service, operation="raw process") == found
    assert find_traces(jaeger.ui_url, service, operation="no such operation") == []


def test_unknown_trace_is_empty(jaeger: BackendInfo) -> None:
    assert get_trace(jaeger.ui_url, uuid.uuid4().hex) == []


def test_ui_address_serves_the_ui_page_and_every_asset_it_references(jaeger: BackendInfo) -> None:
    assets = default_ui_assets(Settings.from_env())
    assert assets is not None
    status, content_type, page = _get(jaeger.ui_url + "/")

    assert status == 200 and content_type.startswith("text/html")
    assert "This is not the Jaeger UI you are looking for" not in page
    assert _title(page) == _title((assets / "index.html").read_text())
    # Jaeger rewrote the page's version line with its build info: the page works with that
    assert f'"gitVersion":"{VERSION}"' in page
    referenced = re.findall(r'(?:src|href)="(?:\.?/)?(static/[^"]+)"', page)
    assert {Path(ref).suffix for ref in referenced} >= {".js", ".css"}
    for ref in referenced:
        status, content_type, body = _get(f"{jaeger.ui_url}/{ref}")
        assert status == 200, ref
        assert body == (assets / ref).read_text(), ref
        expected = "javascript" if ref.endswith(".js") else "text/css"
        assert expected in content_type, (ref, content_type)


def test_trace_deep_link_path_serves_the_ui_page(jaeger: BackendInfo) -> None:
    _, _, root = _get(jaeger.ui_url + "/")
    status, content_type, page = _get(f"{jaeger.ui_url}/trace/{uuid.uuid4().hex}")

    assert (status, page) == (200, root)
    assert content_type.startswith("text/html")


def _get(url: str) -> tuple[int, str, str]:
    """Status, Content-Type and text of a GET without any proxy (Jaeger is on loopback)."""
    with _DIRECT.open(url, timeout=5) as answer:
        return answer.status, answer.headers.get("Content-Type", ""), answer.read().decode()


def _title(html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", html, re.S)
    assert found is not None, "no <title>"
    return found.group(1).strip()


def test_jaeger_listens_on_loopback_only(jaeger: BackendInfo) -> None:
    ui_port = int(jaeger.ui_url.rsplit(":", 1)[1])
    otlp_port = int(jaeger.otlp_endpoint.rsplit(":", 1)[1])
    listening = _listening_sockets()  # inode -> (address, port)
    by_port = {port: inode for inode, (_, port) in listening.items()}
    pid = _owner(by_port[ui_port])

    own = {inode: listening[inode] for inode in _socket_inodes(pid) if inode in listening}

    assert {addr for addr, _ in own.values()} == {"127.0.0.1"}, own
    assert {ui_port, otlp_port} <= {port for _, port in own.values()}
    # the OTLP/HTTP port, the UI/HTTP API and the query service's gRPC API: nothing else
    assert len(own) == 3, own


def _listening_sockets() -> dict[str, tuple[str, int]]:
    """Inode -> (address, port) of every TCP socket in LISTEN state (IPv4 and IPv6)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A":
                continue
            address, port = local.split(":")
            found[inode] = (_address(address), int(port, 16))
    return found


def _address(hex_address: str) -> str:
    if len(hex_address) == 8:
        return ".".join(str(b) for b in reversed(bytes.fromhex(hex_address)))
    return hex_address  # IPv6: shown raw; a loopback-only process has none


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _owner(inode: str) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if inode in _socket_inodes(int(entry.name)):
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError(f"no process owns socket inode {inode}")
