"""InfluxDB 1.x line protocol: one :class:`Point` in, one text line out.

Why a module of its own: the aggregator writes the same points to InfluxDB and to ``.lp`` files,
and both must be byte-for-byte identical for a replayed batch (docs/metrics.md), so the encoding
is a pure function of the point, with no clock and no randomness.

Rules (InfluxDB 1.x line protocol reference, checked against influxd 1.6.7):

- measurement: ``,`` and space are backslash-escaped;
- tag keys, tag values, field keys: ``,``, ``=`` and space are backslash-escaped;
- string field values: double-quoted, with ``"`` and ``\\`` backslash-escaped;
- integers get the ``i`` suffix, booleans are ``true``/``false``, floats use ``repr`` (the
  shortest text that reads back as the same float, e.g. ``0.1``, ``1e+100``);
- tags are sorted by key (what InfluxDB recommends; it also makes the output deterministic),
  fields keep the order of the mapping;
- what InfluxDB would reject is left out instead of failing the whole batch: NaN and infinite
  floats, integers outside int64, empty tag values, empty tag or field keys, and the key
  ``time`` (InfluxDB refuses it as a tag or field name); a point left without any field, or
  with an empty measurement, encodes to ``""`` and :func:`encode_points` skips it;
- line breaks: InfluxDB 1.x cannot carry ``\\n`` in names or tag values, and a line break would
  end the line early in a ``.lp`` file, so every ``\\r`` and ``\\n`` in any name or value
  (string fields included) is replaced by a space before escaping;
- backslashes: inside ``"..."`` they are escaped and round-trip exactly. Elsewhere InfluxDB 1.x
  stores a backslash as written (``a\\b`` stays ``a\\b``) but its parser reads one right before
  ``,``, ``=``, a space or ``"``, or at the very end, as an escape, and no spelling gets such a
  backslash through; so a run of backslashes in that position is left out (``a\\`` becomes
  ``a``, ``a\\,b`` becomes ``a,b``) and every other backslash is written unchanged;
- a measurement starting with ``#`` would make the line a comment that InfluxDB skips, so such a
  point encodes to ``""`` like other unwritable points.

Text is returned as ``str``; writers encode it as UTF-8 (non-ASCII is written as is).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Point", "encode_point", "encode_points"]

FieldValue = int | float | str | bool

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
#: InfluxDB 1.x refuses ``time`` as a tag key or field key (it names the timestamp column).
_RESERVED_KEY = "time"

#: Backslashes InfluxDB 1.x would read as an escape of the delimiter after them (see above).
_UNWRITABLE_BACKSLASHES = re.compile(r'\\+(?=[,= "]|$)')
_LINE_BREAKS = str.maketrans({"\r": " ", "\n": " "})
_MEASUREMENT_ESCAPES = str.maketrans({",": "\\,", " ": "\\ "})
_KEY_ESCAPES = str.maketrans({",": "\\,", "=": "\\=", " ": "\\ "})
_STRING_FIELD_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"'})


@dataclass(frozen=True)
class Point:
    """One InfluxDB point: ``time_ns`` is nanoseconds since the Unix epoch (UTC)."""

    measurement: str
    tags: Mapping[str, str]
    fields: Mapping[str, FieldValue]
    time_ns: int


def encode_point(point: Point) -> str:
    """The point as one line (no newline), or ``""`` when nothing of it is writable."""
    measurement = _escape(point.measurement, _MEASUREMENT_ESCAPES)
    fields = _encode_fields(point.fields)
    if not measurement or measurement.startswith("#") or not fields:
        return ""
    tags = _encode_tags(point.tags)
    head = f"{measurement},{tags}" if tags else measurement
    return f"{head} {fields} {int(point.time_ns)}"


def encode_points(points: Iterable[Point]) -> str:
    """Lines joined by ``"\\n"`` with a trailing ``"\\n"``; ``""`` when no point is writable."""
    lines = [line for line in map(encode_point, points) if line]
    return "\n".join(lines) + "\n" if lines else ""


def _encode_tags(tags: Mapping[str, str]) -> str:
    pairs = []
    for key, value in tags.items():
        if not key or key == _RESERVED_KEY or value is None or value == "":
            continue
        pairs.append((_escape(key, _KEY_ESCAPES), _escape(str(value), _KEY_ESCAPES)))
    return ",".join(f"{key}={value}" for key, value in sorted(pairs))


def _encode_fields(fields: Mapping[str, FieldValue]) -> str:
    encoded = []
    for key, value in fields.items():
        if not key or key == _RESERVED_KEY:
            continue
        text = _field_value(value)
        if text is not None:
            encoded.append(f"{_escape(key, _KEY_ESCAPES)}={text}")
    return ",".join(encoded)


def _field_value(value: object) -> str | None:
    """The value's line-protocol text, or None when InfluxDB could not store it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}i" if _INT64_MIN <= value <= _INT64_MAX else None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return '"' + value.translate(_LINE_BREAKS).translate(_STRING_FIELD_ESCAPES) + '"'
    raise TypeError(f"field values are int, float, str or bool, not {type(value).__name__}")


def _escape(text: str, escapes: dict[int, str]) -> str:
    """``text`` with line breaks replaced by spaces, unwritable backslashes left out, and the
    delimiters of its position escaped."""
    text = _UNWRITABLE_BACKSLASHES.sub("", text.translate(_LINE_BREAKS))
    return text.translate(escapes)
