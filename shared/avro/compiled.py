"""The compiled decoder (native/avro_decoder, Rust): the same records as fastavro, 11× faster.

fastavro spends ~8 µs on one ``transaction``, over half of what the detector runtime spends on a
record (docs/benchmarks.md, "Where a record's microseconds go"); the compiled decoder does the
schema work once and then only reads bytes and builds the Python objects, ~0.7 µs. Its tests
check it against fastavro record for record, corrupt input included
(tests/unit/avro/test_native_decoder.py).

It reads with the writer's schema only, so :class:`~shared.avro.serde.AvroDeserializer` uses it
where writer and reader are the same version (what every producer of the mesh writes once a
rollout is over) and keeps fastavro's schema resolution for the others. ``make`` builds it into
the virtualenv (it needs cargo); where it is missing, or ``MESH_AVRO_DECODER=fastavro`` asks for
it, fastavro decodes everything, as before.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

try:
    from mesh_avro_decoder import DecodeFailure, Decoder
except ImportError:  # not built here: fastavro decodes everything
    Decoder = None

    class DecodeFailure(ValueError):  # type: ignore[no-redef]
        """Never raised: stands in for the compiled decoder's error when it is missing."""


log = logging.getLogger(__name__)

#: ``MESH_AVRO_DECODER=fastavro`` turns the compiled decoder off (to compare, or to rule it out).
CHOICE_VARIABLE = "MESH_AVRO_DECODER"

#: ``decode(message, start)``: the record whose body runs from ``start`` to the message's end.
CompiledDecode = Callable[[bytes, int], dict[str, Any]]


def available() -> bool:
    """True when the compiled decoder is installed and not turned off."""
    return Decoder is not None and os.environ.get(CHOICE_VARIABLE, "") != "fastavro"


def compiled_decoder(canonical_form: str) -> CompiledDecode | None:
    """A compiled decode function for the writer schema with this Parsing Canonical Form, or
    None when the compiled decoder is unavailable (see :func:`available`)."""
    if not available():
        return None
    try:
        decode: CompiledDecode = Decoder(canonical_form).decode
    except ValueError as exc:  # a schema it cannot plan: fastavro reads that one, as before
        log.warning("the compiled Avro decoder refused a schema, fastavro decodes it: %s", exc)
        return None
    return decode


__all__ = ["CHOICE_VARIABLE", "CompiledDecode", "DecodeFailure", "available", "compiled_decoder"]
