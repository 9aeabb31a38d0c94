"""One-off requests to a Kafka broker in its own protocol, for the one thing librdkafka cannot ask.

librdkafka (and so confluent-kafka) never sends LeaveGroup for a static member, and its admin
client has no "remove members" call (Java's ``Admin.removeMembersFromConsumerGroup``); a static
member that stops for good would hold its partitions until its session times out
(:mod:`shared.kafka.static_membership`). This module speaks just enough of the protocol for that
request: the framing (request header v1, response header v0, non-flexible versions only), TLS
and a SASL/SCRAM login, as the mesh's clients log in (:mod:`shared.kafka.security`).

The message layouts follow Kafka's own specifications (``common/message/*.json`` in
kafka-clients); each request here is one the broker of this project (Kafka 4.1) accepts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct
from collections.abc import Mapping
from typing import Any

from shared.errors import MeshError

CLIENT_ID = "mesh-wire"
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
#: The SCRAM mechanisms a login here may use, and their hash.
_SCRAM = {"SCRAM-SHA-512": hashlib.sha512, "SCRAM-SHA-256": hashlib.sha256}


class WireError(MeshError):
    """A request could not be sent or was refused; the message says which and why."""


class Reader:
    """Reads Kafka protocol primitives from the front of a byte string: a broker's answer here,
    a ``__consumer_offsets`` record in the tests' generation reader. Running out of bytes is
    ``error`` (WireError by default), naming ``what`` ran out."""

    def __init__(
        self, data: bytes, error: type[Exception] = WireError, what: str = "a broker's answer"
    ) -> None:
        self.data, self.at = data, 0
        self.error, self.what = error, what

    def _take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise self.error(
                f"{self.what} ends at byte {len(self.data)}, needed {self.at + size}: "
                f"{self.data[:64]!r}"
            )
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def unsigned_varint(self) -> int:
        result = shift = 0
        while True:
            byte = self._take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise self.error(f"varint longer than 5 bytes in {self.data[:64]!r}")

    def string(self, compact: bool = False) -> str | None:
        """An int16-length string, or (compact) an unsigned-varint length + 1; None when null."""
        size = self.unsigned_varint() - 1 if compact else self.int16()
        return None if size < 0 else self._take(size).decode()

    def bytes_(self) -> bytes:
        size = self.int32()
        return b"" if size < 0 else self._take(size)

    def compact_length(self) -> int:
        """A compact array's length (-1 when null)."""
        return self.unsigned_varint() - 1

    def skip_tags(self) -> None:
        """A flexible version's tagged fields, none of which a request here needs."""
        for _ in range(self.unsigned_varint()):
            self.unsigned_varint()  # tag
            self._take(self.unsigned_varint())


def string(value: str | None) -> bytes:
    """A (nullable) STRING: int16 length, then UTF-8."""
    if value is None:
        return struct.pack(">h", -1)
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def bytes_field(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def unsigned_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_string(value: str | None) -> bytes:
    """A (nullable) COMPACT_STRING: unsigned-varint length + 1 (0 for null), then UTF-8."""
    if value is None:
        return b"\x00"
    data = value.encode()
    return unsigned_varint(len(data) + 1) + data


def compact_array(items: list[bytes] | None) -> bytes:
    """A (nullable) COMPACT_ARRAY of already encoded items."""
    if items is None:
        return b"\x00"
    return unsigned_varint(len(items) + 1) + b"".join(items)


#: No tagged fields, as a flexible version's structures end.
NO_TAGS = b"\x00"


class Connection:
    """One connection to one broker, logged in like the mesh's clients when ``login`` says so
    (librdkafka's ``security.protocol``, ``sasl.*`` and ``ssl.ca.location`` keys)."""

    def __init__(self, host: str, port: int, login: Mapping[str, Any], timeout: float) -> None:
        self._correlation = 0
        try:
            raw = socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise WireError(f"cannot reach {host}:{port}: {error.strerror or error}") from None
        protocol = str(login.get("security.protocol", "PLAINTEXT")).upper()
        if protocol in ("SSL", "SASL_SSL"):
            context = ssl.create_default_context(cafile=login.get("ssl.ca.location"))
            raw = context.wrap_socket(raw, server_hostname=host)
        self._socket = raw
        if protocol.startswith("SASL"):
            self._scram(
                str(login.get("sasl.mechanism", "")),
                str(login.get("sasl.username", "")),
                str(login.get("sasl.password", "")),
            )

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_: object) -> None:
        self._socket.close()

    def request(self, api_key: int, version: int, body: bytes, flexible: bool = False) -> Reader:
        """Send one request and return a reader positioned on its response's body (``flexible``:
        a version with tagged fields, whose headers carry them too)."""
        self._correlation += 1
        header = struct.pack(">hhi", api_key, version, self._correlation) + string(CLIENT_ID)
        if flexible:
            header += NO_TAGS
        frame = header + body
        try:
            self._socket.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", self._read(4))[0]
            answer = Reader(self._read(size))
        except OSError as error:
            raise WireError(f"the broker closed the connection: {error}") from None
        if answer.int32() != self._correlation:
            raise WireError("a broker's answer does not match its request")
        if flexible:
            answer.skip_tags()
        return answer

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self._socket.recv(left)
            if not chunk:
                raise WireError("the broker closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _scram(self, mechanism: str, username: str, password: str) -> None:
        """SaslHandshake v1, then RFC 5802's two SCRAM round trips in SaslAuthenticate v1."""
        digest = _SCRAM.get(mechanism)
        if digest is None:
            raise WireError(f"SASL mechanism {mechanism!r} is not one of {', '.join(_SCRAM)}")
        shake = self.request(SASL_HANDSHAKE, 1, string(mechanism))
        if (code := shake.int16()) != 0:
            raise WireError(f"the broker refused SASL mechanism {mechanism} (error {code})")
        nonce = base64.b64encode(os.urandom(18)).decode()
        name = username.replace("=", "=3D").replace(",", "=2C")
        first_bare = f"n={name},r={nonce}"
        server_first = self._authenticate(f"n,,{first_bare}".encode()).decode()
        fields = dict(item.split("=", 1) for item in server_first.split(","))
        if not fields.get("r", "").startswith(nonce):
            raise WireError("the broker's SCRAM answer does not carry this login's nonce")
        salted = hashlib.pbkdf2_hmac(
            digest().name, password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
        )
        client_key = hmac.digest(salted, b"Client Key", digest)
        final_bare = f"c=biws,r={fields['r']}"
        message = f"{first_bare},{server_first},{final_bare}".encode()
        signature = hmac.digest(digest(client_key).digest(), message, digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_final = self._authenticate(
            f"{final_bare},p={base64.b64encode(proof).decode()}".encode()
        ).decode()
        expected = hmac.digest(hmac.digest(salted, b"Server Key", digest), message, digest)
        if server_final != f"v={base64.b64encode(expected).decode()}":
            raise WireError("the broker's SCRAM signature is wrong: not the broker it claims")

    def _authenticate(self, payload: bytes) -> bytes:
        answer = self.request(SASL_AUTHENTICATE, 1, bytes_field(payload))
        code, message = answer.int16(), answer.string()
        if code != 0:
            raise WireError(f"the broker refused the login: {message or f'error {code}'}")
        return answer.bytes_()
