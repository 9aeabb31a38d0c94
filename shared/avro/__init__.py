"""Avro contracts: schema catalogue, single-object encoding, serde, compatibility.

Modules, one concern each:
  catalogue       every schemas/<name>/v<N>.avsc, parsed and fingerprinted once
  single_object   the wire framing: C3 01, 8-byte CRC-64-AVRO fingerprint, body
  serde           AvroSerializer / AvroDeserializer (confluent-kafka style callables)
  resolution      Avro schema-resolution rules: can this reader read that writer?
  compatibility   consecutive versions both ways; ``python -m shared.avro.compatibility``
  lint            the project's rules for schema files (Spark-friendly unions, namespace)
  errors          SchemaError and the SerdeError family

Typical use::

    from shared.avro import AvroSerializer, AvroDeserializer
    encode = AvroSerializer("transaction")          # latest version
    decode = AvroDeserializer("transaction")        # reads every compatible writer version
    record = decode(encode(transaction, None), None)
"""

from shared.avro.catalogue import Catalogue, SchemaVersion, load_catalogue
from shared.avro.errors import (
    CorruptRecordError,
    DecodeError,
    EncodeError,
    IncompatibleSchemaError,
    NotSingleObjectError,
    SchemaError,
    SerdeError,
    UnknownFingerprintError,
)
from shared.avro.serde import AvroDeserializer, AvroSerializer, Record

__all__ = [
    "AvroDeserializer",
    "AvroSerializer",
    "Catalogue",
    "CorruptRecordError",
    "DecodeError",
    "EncodeError",
    "IncompatibleSchemaError",
    "NotSingleObjectError",
    "Record",
    "SchemaError",
    "SchemaVersion",
    "SerdeError",
    "UnknownFingerprintError",
    "load_catalogue",
]
