"""An HTTP gate in front of a real InfluxDB that can kill the writer at the worst moment.

The aggregator writes a micro-batch's points to InfluxDB and only then lets Spark commit the
batch. To kill it between the two, every request goes through this gate (the aggregator's
``MESH_INFLUX_URL`` is the gate's URL): it forwards the request to InfluxDB and returns the
answer. Once armed, the next ``/write`` that InfluxDB accepted runs the kill *before* its answer
goes back, so the points are in InfluxDB and the batch cannot have committed (its handler is
still waiting for the answer). Every accepted write's lines are kept, so a case can check that
the replay wrote the very same points.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from shared.influx.transport import call


@dataclass
class GateLog:
    """What went through: every accepted write's lines with when (time.monotonic()), and the
    write that the kill came after."""

    writes: list[tuple[float, list[str]]] = field(default_factory=list)
    killed_write: list[str] | None = None
    killed_at: float | None = None


class InfluxGate:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.log = GateLog()
        self._kill: Callable[[], object] | None = None
        self._lock = threading.Lock()
        self.killed = threading.Event()
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                gate._forward(self, "GET")

            def do_POST(self) -> None:
                gate._forward(self, "POST")

            def log_message(self, format: str, *args: object) -> None:
                pass  # the case reports what matters

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> InfluxGate:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def arm(self, kill: Callable[[], object]) -> None:
        """Run ``kill`` after the next write InfluxDB accepts, before the writer hears of it."""
        with self._lock:
            self._kill = kill

    def _forward(self, request: BaseHTTPRequestHandler, method: str) -> None:
        parsed = urllib.parse.urlsplit(request.path)
        params = dict(urllib.parse.parse_qsl(parsed.query))
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        answer = call(method, self.upstream, parsed.path, params, body=body, timeout_s=30)
        if parsed.path == "/write" and answer.ok and body:
            lines = body.decode().splitlines()
            with self._lock:
                self.log.writes.append((time.monotonic(), lines))
                kill, self._kill = self._kill, None
            if kill is not None:
                self.log.killed_write, self.log.killed_at = lines, time.monotonic()
                kill()
                self.killed.set()
                return  # the writer is dead: no answer
        request.send_response(answer.status)
        request.send_header("Content-Length", str(len(answer.body)))
        request.end_headers()
        request.wfile.write(answer.body)
