"""A scriptable stand-in for InfluxDB's HTTP API: a real server on 127.0.0.1, in a thread.

The writer's retry, backoff and buffering are about what happens on the wire (a 500, a 400, a
refused connection, a request that hangs), so the tests give it a real socket to talk to rather
than replacing urllib. Each ``/write`` answer is taken from ``answers`` (204 when empty);
``stop()`` closes the listening socket (connections are then refused) and ``start()`` opens the
same port again.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int
    body: str = ""
    delay_s: float = 0.0


@dataclass
class FakeInflux:
    answers: deque[Answer] = field(default_factory=deque)
    query_answers: deque[Answer] = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                params = dict(urllib.parse.parse_qsl(parts.query))
                fake.requests.append(Request(self.command, parts.path, params, body))
                if parts.path == "/write" and fake.answers:
                    answer = fake.answers.popleft()
                elif parts.path == "/query" and fake.query_answers:
                    answer = fake.query_answers.popleft()
                elif parts.path == "/query":
                    answer = Answer(200, '{"results":[{"statement_id":0}]}')
                else:
                    answer = Answer(204)
                time.sleep(answer.delay_s)
                data = answer.body.encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.path == "/write"]

    def written_lines(self) -> list[str]:
        """Lines of every /write request, in arrival order (accepted or not)."""
        return [line for r in self.writes() for line in r.body.decode().splitlines()]

    def fail_writes(self, status: int, count: int, message: str = "boom") -> None:
        for _ in range(count):
            self.answers.append(Answer(status, json.dumps({"error": message})))


class FakeClock:
    """Monotonic seconds that only move when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
