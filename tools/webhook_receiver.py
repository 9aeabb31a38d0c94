"""A webhook receiver on loopback, for the demo, the tests and the benchmark: it takes the
notifier's POSTs, remembers each by its ``Idempotency-Key`` (a repeat is counted, not taken
twice, as a well-behaved receiver does) and answers as told per path:

* ``/ok`` (or any path not told otherwise): 200;
* ``/flaky/<n>``: 500 for the first ``n`` requests of each key, then 200;
* ``/down``: always 500; ``/reject``: always 400;
* ``/slow/<seconds>``: 200 after that long; ``/hang``: never answers before the client gives up.

It listens on 127.0.0.1 (a container on a bridge network: ``--host 0.0.0.0``).
``python -m tools.webhook_receiver --port 8787 [--record FILE]`` runs it in the foreground
(``mesh up`` runs it so for the shipped rules), prints one line per delivery and, with
``--record``, appends each as a JSON line: the idempotency key, the alert's detector, source
record id and event time, when it arrived and, from the notifier's ``Mesh-Source-Timestamp``
header, when the raw record reached Kafka. A repeat (a 2xx request whose key was already taken)
is appended too, marked ``"repeat": true``: a reader that wants one delivery per alert takes the
first per key (:func:`tools.notification_summary.delivered`), and one that counts what a person
would have received twice without the key (chaos case 16's ledger) can.

In a test every request stays in memory to be inspected. The command line's receiver runs for as
long as the mesh (an hour's soak at 1 000 records/s sends it ~15 000 alerts), so it keeps only
the last ``--keep`` requests and their keys' tries: the record file holds every delivery. What it
must remember of every key, to tell a repeat, is an 8-byte digest (about 60 bytes with the set's
slot; a request with its body kept in two lists grew it 28 MiB an hour).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from shared.lineage import SOURCE_TIMESTAMP_HTTP_HEADER

IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Where it listens unless told (a bridge-network container listens on 0.0.0.0 inside it).
LOOPBACK = "127.0.0.1"
#: How long ``/hang`` holds a request (longer than any test's webhook timeout).
HANG_S = 60.0
#: Requests (and keys' tries) the command line's receiver keeps in memory.
KEEP = 1_000


@dataclass
class Received:
    path: str
    key: str
    body: dict
    at_s: float
    traceparent: str | None
    #: the raw record's Kafka timestamp (ms), if the notifier sent it
    source_ms: int | None = None

    def line(self, repeat: bool = False) -> str:
        """This delivery as the ``--record`` file keeps it."""
        return json.dumps({
            "alert_id": self.key, "path": self.path, "detector": self.body.get("detector"),
            "source_record_id": self.body.get("source_record_id"),
            "event_time": self.body.get("event_time"), "at_ms": round(self.at_s * 1000),
            "source_ms": self.source_ms, **({"repeat": True} if repeat else {}),
        })  # fmt: skip


@dataclass
class Receiver:
    """What came in; thread-safe. With ``keep``, only the newest ``keep`` requests, taken keys
    and keys' tries stay (a long-running receiver); without, everything (a test)."""

    keep: int | None = None
    #: the first request of each idempotency key that was answered 2xx
    taken: dict[str, Received] = field(default_factory=dict)
    #: every request, in arrival order
    requests: deque[Received] = field(init=False)
    #: requests per key, answered or not
    tries: Counter[str] = field(default_factory=Counter)
    #: 2xx requests whose key was already taken
    repeats: int = 0
    #: every request answered 2xx, in arrival order (a key per path: channels share alert ids)
    answered: deque[Received] = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    echo: bool = False
    #: where each taken delivery is appended as a JSON line, if anywhere
    record: Path | None = None
    #: digests of every taken key: what tells a repeat once ``taken`` has let the key go
    _taken_digests: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.requests = deque(maxlen=self.keep)
        self.answered = deque(maxlen=self.keep)

    def arrived(self, request: Received) -> int:
        """Count ``request``; how many requests its key has had."""
        with self.lock:
            self.requests.append(request)
            self.tries[request.key] += 1
            tries = self.tries[request.key]
            self._forget_oldest(self.tries)
            return tries

    def take(self, request: Received) -> bool:
        """``request`` was answered 2xx: record it; whether its key was taken before."""
        digest = int.from_bytes(hashlib.blake2b(request.key.encode(), digest_size=8).digest())
        with self.lock:
            self.answered.append(request)
            repeat = digest in self._taken_digests
            if repeat:
                self.repeats += 1
            else:
                self._taken_digests.add(digest)
                self.taken[request.key] = request
                self._forget_oldest(self.taken)
            if self.record is not None:
                with self.record.open("a") as out:
                    out.write(request.line(repeat) + "\n")
            return repeat

    def _forget_oldest(self, by_key: dict) -> None:
        if self.keep is not None and len(by_key) > self.keep:
            del by_key[next(iter(by_key))]

    def delivered(self, path_prefix: str = "") -> dict[str, Received]:
        """The first 2xx request of each key among the paths that start with ``path_prefix``."""
        with self.lock:
            first: dict[str, Received] = {}
            for request in self.answered:
                if request.path.startswith(path_prefix):
                    first.setdefault(request.key, request)
            return first


class _Handler(BaseHTTPRequestHandler):
    receiver: Receiver
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        key = self.headers.get(IDEMPOTENCY_HEADER, "")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._answer(400, b"not JSON")
            return
        source = self.headers.get(SOURCE_TIMESTAMP_HTTP_HEADER)
        arrived = Received(self.path, key, body, time.time(), self.headers.get("traceparent"),
                           int(source) if source and source.isdigit() else None)  # fmt: skip
        status = self._status_for(self.receiver.arrived(arrived))
        if 200 <= status < 300:
            self.receiver.take(arrived)
            if self.receiver.echo:
                print(f"delivered {key} ({body.get('detector')}/{body.get('rule')}, "
                      f"{body.get('customer_id')}) to {self.path}", flush=True)  # fmt: skip
        self._answer(status, b"")

    def _status_for(self, tries: int) -> int:
        parts = self.path.strip("/").split("/")
        if parts[0] == "flaky":
            return 500 if tries <= int(parts[1]) else 200
        if parts[0] == "down":
            return 500
        if parts[0] == "reject":
            return 400
        if parts[0] == "slow":
            time.sleep(float(parts[1]))
        if parts[0] == "hang":
            time.sleep(HANG_S)
        return 200

    def _answer(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up (a hang): nothing to answer
            pass

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the receiver's own lines (``echo``) say what matters."""


class WebhookReceiver:
    """The receiver's server in a background thread; a context manager."""

    def __init__(
        self,
        port: int = 0,
        echo: bool = False,
        record: Path | None = None,
        host: str = LOOPBACK,
        keep: int | None = None,
    ) -> None:
        self.received = Receiver(keep=keep, echo=echo, record=record)
        handler = type("Handler", (_Handler,), {"receiver": self.received})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "/ok") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread (the command line's foreground receiver)."""
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.webhook_receiver", description=__doc__)
    parser.add_argument("--host", default=LOOPBACK, help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8787, help="port (8787)")
    parser.add_argument("--record", type=Path, help="append each delivery to this JSON-lines file")
    parser.add_argument(
        "--keep", type=int, default=KEEP, help=f"requests kept in memory ({KEEP}; all: --record)"
    )
    args = parser.parse_args(argv)
    if args.keep < 1:
        print(f"webhook receiver: error: --keep {args.keep}: keep at least 1 request in memory")
        return 2
    if args.record is not None:
        args.record.parent.mkdir(parents=True, exist_ok=True)
    try:
        receiver = WebhookReceiver(
            args.port, echo=True, record=args.record, host=args.host, keep=args.keep
        )
    except OSError as error:
        print(f"webhook receiver: error: {args.host}:{args.port}: {error.strerror}")
        return 2
    print(f"webhook receiver on http://{args.host}:{receiver.port}/", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        receiver.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
