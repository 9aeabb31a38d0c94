"""Why a message on ``metrics`` or ``metrics.windows`` is a dead letter.

The Avro failures reuse shared.avro's classes; their full class names are what the
``mesh.error.class`` header carries, as for every other dead letter of the mesh.
"""

from __future__ import annotations

from shared import spark_avro
from shared.avro.errors import DecodeError


class MissingKeyError(DecodeError):
    """A metric snapshot without a key: compaction could never replace it, so it is refused."""


NOT_SINGLE_OBJECT = spark_avro.NOT_SINGLE_OBJECT
UNKNOWN_FINGERPRINT = spark_avro.UNKNOWN_FINGERPRINT
INCOMPATIBLE_SCHEMA = spark_avro.INCOMPATIBLE_SCHEMA
CORRUPT_RECORD = spark_avro.CORRUPT_RECORD
MISSING_KEY = spark_avro.class_name(MissingKeyError)
