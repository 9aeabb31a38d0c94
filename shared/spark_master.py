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


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def master_addresses(master: str) -> list[tuple[str, int]]:
    """(host, port) of each master of ``spark://h1:p1[,h2:p2]`` (none for other masters); a
    :class:`ConfigError` for an address that is not host:port."""
    if not master.startswith("spark://"):
        return []
    found = []
    for address in master[len("spark://") :].split(","):
        parts = urlsplit(f"spark://{address}")
        try:
            host, port = parts.hostname, parts.port or 7077
        except ValueError:
            host = None
        if not host:
            raise ConfigError(f"--master {master}: {address!r} is not host:port")
        found.append((host, port))
    return found


def on_loopback(master: str) -> bool:
    """A standalone master on this machine's loopback only."""
    addresses = master_addresses(master)
    return bool(addresses) and all(host in LOOPBACK for host, _ in addresses)


def check_master_answers(master: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Nothing for ``local[...]`` and other masters; for ``spark://h1:p1[,h2:p2]``, a
    :class:`ConfigError` unless one of the addresses accepts a connection."""
    addresses = master_addresses(master)
    if not addresses:
        return
    failures = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            failures.append(f"{host}:{port} ({exc.strerror or exc})")
    raise ConfigError(
        f"--master {master}: no Spark master answers at {', '.join(failures)}; start the "
        "cluster (docs/backtest.md) or use --master local[2]"
    )
