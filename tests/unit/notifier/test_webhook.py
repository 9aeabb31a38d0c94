"""The webhook channel against a real HTTP receiver on 127.0.0.1: what one attempt gives for each
kind of answer, the idempotency key it sends, and the retry schedule."""

from __future__ import annotations

import http.server
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from services.notifier.rules import WebhookChannel
from services.notifier.webhook import IDEMPOTENCY_HEADER, WebhookSender, retry_delay


class Receiver(http.server.ThreadingHTTPServer):
    """Answers each POST with the next planned (status, delay, headers); records what came."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.plan: list[tuple[int, float, dict[str, str]]] = []
        self.received: list[tuple[dict[str, str], bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/alerts"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((dict(self.headers), body))
        status, delay, headers = self.server.plan.pop(0) if self.server.plan else (200, 0, {})
        time.sleep(delay)
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(b"" if status < 300 else b"receiver says no")
        except (BrokenPipeError, ConnectionResetError):  # the sender timed out and went
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _sender(url: str, **settings: Any) -> WebhookSender:
    return WebhookSender(WebhookChannel("team", url, **settings))


def test_a_2xx_is_delivered_with_the_idempotency_key_and_the_channels_headers(
    receiver: Receiver,
) -> None:
    sender = WebhookSender(WebhookChannel("team", receiver.url, headers={"X-Team": "fraud"}))
    outcome = sender.send(b'{"alert_id": "a1"}', "a1", {"traceparent": "00-abc-def-01"})
    assert (outcome.delivered, outcome.status, outcome.error) == (True, 200, None)
    headers, body = receiver.received[0]
    assert body == b'{"alert_id": "a1"}'
    assert headers[IDEMPOTENCY_HEADER] == "a1" and headers["X-Team"] == "fraud"
    assert headers["Content-Type"] == "application/json"
    assert headers["traceparent"] == "00-abc-def-01"


def test_a_5xx_or_429_may_be_retried_and_says_when(receiver: Receiver) -> None:
    receiver.plan = [(500, 0, {}), (429, 0, {"Retry-After": "7"})]
    sender = _sender(receiver.url)
    failed = sender.send(b"{}", "a1")
    assert (failed.delivered, failed.retriable, failed.status) == (False, True, 500)
    assert failed.error == "HTTP 500: receiver says no"
    busy = sender.send(b"{}", "a1")
    assert (busy.retriable, busy.status, busy.retry_after_s) == (True, 429, 7.0)


def test_a_4xx_will_not_get_better(receiver: Receiver) -> None:
    receiver.plan = [(400, 0, {})]
    outcome = _sender(receiver.url).send(b"{}", "a1")
    assert (outcome.delivered, outcome.retriable, outcome.status) == (False, False, 400)


def test_a_hanging_receiver_times_out_and_a_closed_port_is_refused(receiver: Receiver) -> None:
    receiver.plan = [(200, 1.0, {})]
    slow = _sender(receiver.url, timeout_s=0.2).send(b"{}", "a1")
    assert (slow.delivered, slow.retriable, slow.error) == (False, True, "timed out")
    assert slow.seconds < 0.9
    receiver.shutdown()
    receiver.server_close()
    refused = _sender(receiver.url).send(b"{}", "a1")
    assert (refused.delivered, refused.retriable, refused.error) == (
        False, True, "connection refused"
    )  # fmt: skip


def test_the_retry_delay_doubles_up_to_its_cap_with_jitter_and_respects_retry_after() -> None:
    channel = WebhookChannel("team", "http://127.0.0.1:1/", backoff_initial_s=1.0,
                             backoff_max_s=8.0)  # fmt: skip
    rng = random.Random(4)
    for attempts, base in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)):
        delays = [retry_delay(channel, attempts, rng=rng) for _ in range(200)]
        assert base / 2 <= min(delays) and max(delays) <= base, attempts
        assert max(delays) - min(delays) > base / 4, "no jitter"
    assert retry_delay(channel, 1, retry_after_s=30.0, rng=rng) == 30.0
