"""Avro single-object encoding as a Spark column, from the same .avsc files the Python side uses.

Spark's ``to_avro`` writes the binary body; the 10-byte header (C3 01 and the writer schema's
CRC-64-AVRO fingerprint, computed by shared.avro from the same file) is a constant per schema.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from shared.avro.catalogue import SchemaVersion
from shared.avro.single_object import MARKER


def single_object(struct: Column, schema: SchemaVersion) -> Column:
    """``struct`` encoded as one Avro single-object message of ``schema``."""
    header = F.lit(MARKER + schema.fingerprint)
    return F.concat(header, to_avro(struct, schema.text))
