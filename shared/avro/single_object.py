"""Avro single-object encoding: the framing of every Avro message on the wire.

A message is ``C3 01`` (the marker), the 8-byte CRC-64-AVRO fingerprint of the writer schema's
Parsing Canonical Form in little-endian byte order, then the schema's binary encoding of the
record. This is exactly the Avro specification's "Single-object encoding", so the Apache Java
``BinaryMessageDecoder`` (and Spark, and any other conforming library) reads our messages, and a
reader can always tell which schema wrote a message without a registry service.

This module only deals with those 10 header bytes; it knows nothing about schemas.
"""

from __future__ import annotations

from shared.avro.errors import NotSingleObjectError

#: The two marker bytes that open every single-object encoded message.
MARKER = b"\xc3\x01"
#: Length of the fingerprint (CRC-64-AVRO, little-endian).
FINGERPRINT_SIZE = 8
#: Marker plus fingerprint: the body starts at this offset.
HEADER_SIZE = len(MARKER) + FINGERPRINT_SIZE


def header(fingerprint: bytes) -> bytes:
    """The 10-byte header for a writer schema with this fingerprint (precompute it once)."""
    if len(fingerprint) != FINGERPRINT_SIZE:
        raise ValueError(
            f"a CRC-64-AVRO fingerprint has {FINGERPRINT_SIZE} bytes, got {len(fingerprint)}"
        )
    return MARKER + bytes(fingerprint)


def frame(fingerprint: bytes, body: bytes) -> bytes:
    """A complete message: header for ``fingerprint`` followed by the binary ``body``."""
    return header(fingerprint) + body


def read_fingerprint(message: bytes) -> bytes:
    """The writer fingerprint of ``message``, or :class:`NotSingleObjectError` if it has none.

    The body is not looked at: it is whatever follows :data:`HEADER_SIZE`.
    """
    if len(message) < HEADER_SIZE or message[:2] != MARKER:
        raise NotSingleObjectError(_why_not(message))
    fingerprint = message[2:HEADER_SIZE]
    # A slice of bytes is bytes already (every record from Kafka); copy only other buffers.
    return fingerprint if fingerprint.__class__ is bytes else bytes(fingerprint)


def split(message: bytes) -> tuple[bytes, bytes]:
    """``(fingerprint, body)`` of a message; raises :class:`NotSingleObjectError`."""
    return read_fingerprint(message), bytes(message[HEADER_SIZE:])


def is_single_object(message: bytes) -> bool:
    """True if ``message`` starts with the marker and is long enough to hold a fingerprint."""
    return len(message) >= HEADER_SIZE and message[:2] == MARKER


def _why_not(message: bytes) -> str:
    """Explain a bad header, showing the first bytes so plain JSON is easy to recognise."""
    start = bytes(message[:12])
    if message[:2] != MARKER:
        return (
            f"not an Avro single-object message: it starts with {start!r}, not the marker "
            "C3 01; was it produced with the project's Avro serializer?"
        )
    return (
        f"truncated Avro single-object message: {len(message)} bytes, the header alone needs "
        f"{HEADER_SIZE}"
    )
