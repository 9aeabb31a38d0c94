"""The webhook channel: one HTTP POST per delivery attempt, with an idempotency key.

urllib3 (a well-kept client, pinned in the lock) does the HTTP: a connection pool per channel
sized to its concurrency, connect and read timeouts, no redirects. It is *not* asked to retry:
each attempt is one request, and the next one is scheduled in the delivery book
(:mod:`services.notifier.book`), which is persisted in the changelog. So a retry survives a
notifier restart, which no in-process retry loop would, and a slow receiver holds only its own
channel's workers. :func:`retry_delay` is the schedule: exponential, capped, with jitter, and
never sooner than the receiver's ``Retry-After``.

Every request carries ``Idempotency-Key: <alert_id>``: an attempt that reached the receiver but
whose answer was lost is sent again with the same key, and the receiver can drop it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping

import urllib3

from services.notifier.outcome import Outcome
from shared.notifier_channels import Channel, WebhookChannel

IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Answers worth trying again: the receiver was busy, timed out or failed on its side.
RETRIABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class WebhookSender:
    """Sends to one webhook channel; thread-safe (urllib3's pool is)."""

    def __init__(self, channel: WebhookChannel) -> None:
        self.channel = channel
        self._pool = urllib3.PoolManager(
            num_pools=1,
            maxsize=channel.concurrency,
            block=True,
            retries=False,
            timeout=urllib3.Timeout(connect=channel.timeout_s, read=channel.timeout_s),
        )

    def send(
        self, body: bytes, idempotency_key: str, extra_headers: Mapping[str, str] | None = None
    ) -> Outcome:
        headers = {
            **self.channel.headers,
            **(extra_headers or {}),
            "Content-Type": "application/json",
            IDEMPOTENCY_HEADER: idempotency_key,
        }
        started = time.perf_counter()
        try:
            response = self._pool.request(
                "POST", self.channel.url, body=body, headers=headers, redirect=False,
                preload_content=True,
            )  # fmt: skip
        except urllib3.exceptions.HTTPError as failure:
            reason = _transport_reason(failure)
            return Outcome(False, True, None, reason, time.perf_counter() - started)
        seconds = time.perf_counter() - started
        status = response.status
        if 200 <= status < 300:
            return Outcome(True, False, status, None, seconds)
        text = response.data[:200].decode(errors="replace").strip()
        problem = f"HTTP {status}" + (f": {text}" if text else "")
        return Outcome(False, status in RETRIABLE_STATUS, status, problem, seconds,
                       _retry_after(response.headers.get("Retry-After")))  # fmt: skip

    def close(self) -> None:
        self._pool.clear()


def retry_delay(
    channel: Channel,
    attempts: int,
    retry_after_s: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds before attempt ``attempts + 1``: ``backoff_initial_s`` doubled per attempt made,
    capped at ``backoff_max_s``, then a random point in its upper half (jitter spreads retries
    of many alerts out, the lower bound keeps the backoff growing), and at least Retry-After."""
    base = min(channel.backoff_max_s, channel.backoff_initial_s * 2 ** max(attempts - 1, 0))
    delay = (rng or random).uniform(base / 2, base)
    return max(delay, retry_after_s or 0.0)


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None  # an HTTP date: rare from a webhook; the backoff applies


def _transport_reason(error: Exception) -> str:
    # NewConnectionError is a ConnectTimeoutError too (urllib3 2.x): ask for it first.
    if isinstance(error, urllib3.exceptions.NewConnectionError):
        return "connection refused"
    if isinstance(error, urllib3.exceptions.TimeoutError):
        return "timed out"
    return type(error).__name__
