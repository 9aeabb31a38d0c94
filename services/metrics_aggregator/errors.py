"""Why a message on ``metrics`` or ``metrics.windows`` is a dead letter.

The Avro failures reuse shared.avro's classes; their full class names are what the
``mesh.error.class`` header carries, as for every other dead letter of the mesh.
"""

from __future__ import annotations

from shared.avro.errors import (
    CorruptRecordError,
    DecodeError,
    IncompatibleSchemaError,
    NotSingleObjectError,
    UnknownFingerprintError,
)


class MissingKeyError(DecodeError):
    """A metric snapshot without a key: compaction could never replace it, so it is refused."""


def class_name(cls: type[BaseException]) -> str:
    """``shared.avro.errors.CorruptRecordError``: what ``mesh.error.class`` says."""
    return f"{cls.__module__}.{cls.__qualname__}"


NOT_SINGLE_OBJECT = class_name(NotSingleObjectError)
UNKNOWN_FINGERPRINT = class_name(UnknownFingerprintError)
INCOMPATIBLE_SCHEMA = class_name(IncompatibleSchemaError)
CORRUPT_RECORD = class_name(CorruptRecordError)
MISSING_KEY = class_name(MissingKeyError)
