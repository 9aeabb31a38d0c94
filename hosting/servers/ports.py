"""Finding free TCP ports on loopback for the local broker."""

from __future__ import annotations

import socket


def is_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port and we may bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def ephemeral_port(host: str) -> int:
    """A port the operating system considers free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def first_free(
    host: str, preferred: int, *, attempts: int = 50, avoid: set[int] | None = None
) -> int:
    """``preferred`` if free, else the next free port above it, else an ephemeral one.

    ``preferred == 0`` asks for an ephemeral port straight away (what tests use).
    """
    avoid = avoid or set()
    if preferred:
        for port in range(preferred, min(preferred + attempts, 65536)):
            if port not in avoid and is_free(host, port):
                return port
    while True:
        port = ephemeral_port(host)
        if port not in avoid:
            return port
