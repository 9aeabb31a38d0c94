"""Exceptions of the Avro package.

Two families, because callers treat them differently:

* :class:`SchemaError` is a problem with the schema files or a request for a schema that does
  not exist. It is a deployment mistake: the service should stop and say which file to fix.
* :class:`SerdeError` is a problem with one record. Decode errors (:class:`DecodeError` and its
  subclasses) are about bytes from the wire: the runtime dead-letters that one message and goes
  on; nothing is ever dropped silently. Encode errors are a bug in the producing code.

The class name is what ends up in the ``mesh.error.class`` dead-letter header, so each failure
mode has its own class rather than one class with a code.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.errors import MeshError


class SchemaError(MeshError):
    """A schema file is unusable, or a schema name/version was asked for that does not exist."""


class SerdeError(MeshError):
    """One record could not be encoded or decoded."""


class EncodeError(SerdeError):
    """A record does not fit the writer schema (missing, extra or mistyped field)."""


class DecodeError(SerdeError):
    """Bytes from the wire could not be turned into a record; dead-letter them."""


class NotSingleObjectError(DecodeError):
    """The message does not start with the single-object marker C3 01 or is shorter than a header.

    Usually someone produced plain JSON or another encoding to an Avro topic.
    """


class CorruptRecordError(DecodeError):
    """The header is fine but the body is truncated, undecodable or followed by extra bytes."""


class UnknownFingerprintError(DecodeError):
    """The writer schema's fingerprint is not in the catalogue.

    The producer uses a schema this consumer has never seen: deploy the newer schemas/ folder
    to the consumer (or the producer is writing a schema that was never committed).
    """

    def __init__(self, fingerprint: bytes, known: int) -> None:
        self.fingerprint = bytes(fingerprint)
        super().__init__(
            f"unknown writer schema fingerprint {self.fingerprint.hex()} "
            f"(the catalogue knows {known} schema versions); deploy the schemas/ folder that "
            "contains the producer's schema to this consumer"
        )

    @property
    def fingerprint_hex(self) -> str:
        """The fingerprint as the 16 hex digits of its little-endian bytes, as on the wire."""
        return self.fingerprint.hex()


class IncompatibleSchemaError(DecodeError):
    """The writer schema is known but cannot be resolved to the reader schema.

    Typically a message of another record type on this topic (a login on records.transactions).
    """

    def __init__(self, writer: str, reader: str, problems: Sequence[str]) -> None:
        self.writer = writer
        self.reader = reader
        self.problems = tuple(problems)
        shown = "; ".join(self.problems[:3])
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        super().__init__(f"data written with {writer} cannot be read as {reader}: {shown}{more}")
