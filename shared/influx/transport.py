"""The one HTTP call every InfluxDB client here makes, on urllib alone (no new dependency).

Why a module: the writer and the query helper need the same two things urllib does not give by
default: an HTTP error status returned as a value (a 400 from InfluxDB is an answer, not a crash),
and no proxy for a loopback InfluxDB (an ``http_proxy`` variable in the environment would
otherwise send ``127.0.0.1`` traffic to the proxy).
"""

from __future__ import annotations

import http.client
import ipaddress
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_DEFAULT = urllib.request.build_opener()


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace").strip()


def call(
    method: str,
    base_url: str,
    path: str,
    params: dict[str, str],
    *,
    body: bytes | None = None,
    timeout_s: float,
) -> Response:
    """``method base_url/path?params``; any HTTP status is returned, transport failures raise
    ``OSError`` (refused, reset, timed out, unresolvable) or ``http.client.HTTPException``."""
    url = f"{base_url.rstrip('/')}{path}?{urllib.parse.urlencode(params)}"
    headers = {"Content-Type": "text/plain; charset=utf-8"} if body is not None else {}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    opener = _DIRECT if _is_loopback(base_url) else _DEFAULT
    try:
        with opener.open(request, timeout=timeout_s) as answer:
            return Response(answer.status, answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return Response(error.code, error.read())


TRANSPORT_ERRORS = (OSError, http.client.HTTPException)
"""What :func:`call` raises when no HTTP answer came back (``URLError`` is an ``OSError``)."""


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
