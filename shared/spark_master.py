"""Is a standalone Spark master there? Asked before a session is built on it.

A ``spark://`` master that does not answer makes Spark's client retry for about a minute and then
log "All masters are unresponsive" without failing the Python call that asked for the session;
one TCP connect per master address tells the user at once, in one line.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from shared.errors import ConfigError

CONNECT_TIMEOUT_S = 3.0


def check_master_answers(master: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Nothing for ``local[...]`` and other masters; for ``spark://h1:p1[,h2:p2]``, a
    :class:`ConfigError` unless one of the addresses accepts a connection."""
    if not master.startswith("spark://"):
        return
    addresses = master[len("spark://") :].split(",")
    failures = []
    for address in addresses:
        parts = urlsplit(f"spark://{address}")
        try:
            host, port = parts.hostname, parts.port or 7077
        except ValueError:
            raise ConfigError(f"--master {master}: {address!r} is not host:port") from None
        if not host:
            raise ConfigError(f"--master {master}: {address!r} is not host:port")
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            failures.append(f"{host}:{port} ({exc.strerror or exc})")
    raise ConfigError(
        f"--master {master}: no Spark master answers at {', '.join(failures)}; start the "
        "cluster (docs/backtest.md) or use --master local[2]"
    )
