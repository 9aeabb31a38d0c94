"""Deliberately invalid raw records, of many kinds, each tagged with what is wrong.

Customers' systems send broken data in more ways than one, and the ingest must route every one of
them to ``records.invalid`` with a reason instead of crashing or letting it through. Each kind
starts from a valid record and breaks exactly one rule, so a record that slips through the
ingest points at exactly one missing check. Kinds live in one registry (``KINDS``); a name not
in it is not a kind.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tools.loadgen.valid_records import LOGINS, RECORD_TYPES, REQUIRED_FIELDS, TRANSACTIONS
from tools.loadgen.valid_records import encode as encode_valid

#: Records larger than this are invalid (the ``oversized`` kind crosses it). Half a MiB keeps an
#: oversized record deliverable by a Kafka with default limits (message.max.bytes ~ 1 MB).
DEFAULT_MAX_RECORD_BYTES = 512 * 1024
#: 2100-01-01T00:00:00Z: "far in the future" whatever clock the ingest compares with.
FAR_FUTURE_MS = 4_102_444_800_000


@dataclass(frozen=True, slots=True)
class Malformation:
    value: bytes
    #: What exactly is wrong, for people reading the ground truth.
    detail: str
    #: False when the breakage removed or spoiled ``customer_id`` (then the message has no key).
    customer_intact: bool = True


Maker = Callable[[random.Random, dict[str, Any], str, int], Malformation]


@dataclass(frozen=True, slots=True)
class MalformedKind:
    name: str
    make: Maker
    applies_to: frozenset[str] = frozenset(RECORD_TYPES)
    #: Relative frequency among the kinds that apply to a record type.
    weight: float = 1.0


_PLACEHOLDER = "__loadgen_raw_token__"


def _with_raw(record: dict[str, Any], field: str, token: bytes) -> bytes:
    """The record encoded with ``field`` set to ``token`` verbatim (for tokens JSON cannot say)."""
    return encode_valid({**record, field: _PLACEHOLDER}).replace(
        f'"{_PLACEHOLDER}"'.encode(), token, 1
    )


def _not_json(rng: random.Random, record: dict[str, Any], _type: str, _max: int) -> Malformation:
    text = encode_valid(record)
    variants: tuple[tuple[str, Callable[[], bytes]], ...] = (
        ("form-encoded", lambda: "&".join(f"{k}={v}" for k, v in record.items()).encode()),
        ("python repr", lambda: repr(record).encode()),
        ("xml", lambda: _xml(record)),
        ("csv line", lambda: ",".join(str(v) for v in record.values()).encode()),
        ("trailing comma", lambda: text[:-1] + b",}"),
        ("unquoted keys", lambda: b"{" + b",".join(_unquoted(record)) + b"}"),
    )
    name, make = variants[int(rng.random() * len(variants))]
    return Malformation(make(), name)


def _xml(record: dict[str, Any]) -> bytes:
    return (
        "<record>" + "".join(f"<{k}>{v}</{k}>" for k, v in record.items()) + "</record>"
    ).encode()


def _unquoted(record: dict[str, Any]) -> Iterable[bytes]:
    return (k.encode() + b":" + encode_valid(v) for k, v in record.items())


def _truncated(rng: random.Random, record: dict[str, Any], _type: str, _max: int) -> Malformation:
    text = encode_valid(record)
    cut = rng.randint(1, len(text) - 1)
    return Malformation(text[:cut], f"cut after {cut} of {len(text)} bytes")


def _not_object(rng: random.Random, record: dict[str, Any], _type: str, _max: int) -> Malformation:
    variants = (
        ("array holding the record", b"[" + encode_valid(record) + b"]"),
        ("number", str(record["event_time"]).encode()),
        ("string", encode_valid(record["record_id"])),
        ("null", b"null"),
        ("boolean", b"true"),
        ("empty array", b"[]"),
    )
    detail, value = variants[int(rng.random() * len(variants))]
    return Malformation(value, detail)


def _empty(_rng: random.Random, _record: dict[str, Any], _type: str, _max: int) -> Malformation:
    return Malformation(b"", "zero-length value")


_LATIN1_NAMES = ("Café Zürich", "Bäckerei Müller", "São Paulo Açaí", "Crème brûlée", "Ñandú")


def _non_utf8(rng: random.Random, record: dict[str, Any], _type: str, _max: int) -> Malformation:
    choice = int(rng.random() * 3)
    if choice == 0:
        name = _LATIN1_NAMES[int(rng.random() * len(_LATIN1_NAMES))]
        value = _with_raw(record, "merchant_name", b'"' + name.encode("latin-1") + b'"')
        detail = "latin-1 text in a string"
    elif choice == 1:
        value = ("\ufeff" + encode_valid(record).decode()).encode("utf-16-le")
        detail = "utf-16 with byte order mark"
    else:
        value = _with_raw(record, "note", b'"\xc3\x28"')
        detail = "invalid two-byte sequence"
    return Malformation(value, detail)


_FILLER = b"lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 64


def _oversized(
    rng: random.Random, record: dict[str, Any], _type: str, max_bytes: int
) -> Malformation:
    base = encode_valid({**record, "note": ""})
    target = max_bytes + 1 + rng.randrange(4096)
    missing = target - len(base)
    filler = _FILLER * (missing // len(_FILLER) + 1)
    value = _with_raw(record, "note", b'"' + filler[:missing] + b'"')
    return Malformation(value, f"{len(value)} bytes, limit {max_bytes}")


def _missing_field(
    rng: random.Random, record: dict[str, Any], record_type: str, _max: int
) -> Malformation:
    fields = REQUIRED_FIELDS[record_type]
    field = fields[int(rng.random() * len(fields))]
    rest = {k: v for k, v in record.items() if k != field}
    return Malformation(encode_valid(rest), f"no {field}", customer_intact=field != "customer_id")


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


#: (field, description, replacement) per record type; each breaks the field's JSON type.
_WRONG_TYPES: dict[str, tuple[tuple[str, str, Callable[[Any], Any]], ...]] = {
    "any": (
        ("event_time", "an ISO-8601 string", _iso),
        ("event_time", "digits in a string", str),
        ("event_time", "a fractional number", lambda v: v + 0.5),
        ("event_time", "a boolean", lambda v: True),
        ("customer_id", "a number", lambda v: int(v[4:], 16)),
        ("customer_id", "null", lambda v: None),
        ("record_id", "a number", lambda v: int(v[4:], 16)),
        ("country", "a number", lambda v: 276),
    ),
    TRANSACTIONS: (
        ("amount", "a string", lambda v: str(v)),
        ("amount", "a boolean", lambda v: True),
        ("amount", "null", lambda v: None),
        ("amount", "an array", lambda v: [v]),
        ("currency", "a number", lambda v: 978),
        ("merchant_id", "an object", lambda v: {"id": v}),
    ),
    LOGINS: (
        ("success", '"yes"', lambda v: "yes"),
        ("success", '"true"', lambda v: "true"),
        ("success", "a number", lambda v: 1),
        ("success", "null", lambda v: None),
    ),
}


def _wrong_type(
    rng: random.Random, record: dict[str, Any], record_type: str, _max: int
) -> Malformation:
    options = _WRONG_TYPES["any"] + _WRONG_TYPES[record_type]
    field, description, replace = options[int(rng.random() * len(options))]
    broken = {**record, field: replace(record[field])}
    return Malformation(
        encode_valid(broken), f"{field} is {description}", customer_intact=field != "customer_id"
    )


def _non_positive_amount(
    rng: random.Random, record: dict[str, Any], _type: str, _max: int
) -> Malformation:
    amount = (0, 0.0, -record["amount"], -0.01)[int(rng.random() * 4)]
    return Malformation(encode_valid({**record, "amount": amount}), f"amount {amount}")


def _non_finite_amount(
    rng: random.Random, record: dict[str, Any], _type: str, _max: int
) -> Malformation:
    token = (b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999")[int(rng.random() * 5)]
    return Malformation(_with_raw(record, "amount", token), f"amount {token.decode()}")


def _unknown_currency(
    rng: random.Random, record: dict[str, Any], _type: str, _max: int
) -> Malformation:
    options = ("XYZ", "ABC", "QQQ", record["currency"].lower(), "Eur", "EURO", "US$", "", "840")
    code = options[int(rng.random() * len(options))]
    return Malformation(encode_valid({**record, "currency": code}), f"currency {code!r}")


def _unknown_country(
    rng: random.Random, record: dict[str, Any], _type: str, _max: int
) -> Malformation:
    code = ("XX", "ZZ", "AA", "QZ", "UK", "USA", "DEU", "", "U1")[int(rng.random() * 9)]
    return Malformation(encode_valid({**record, "country": code}), f"country {code!r}")


def _future_event_time(
    rng: random.Random, record: dict[str, Any], _type: str, _max: int
) -> Malformation:
    when = FAR_FUTURE_MS + rng.randrange(365 * 86_400_000)
    return Malformation(encode_valid({**record, "event_time": when}), f"event_time {_iso(when)}")


def _empty_id(
    rng: random.Random, record: dict[str, Any], record_type: str, _max: int
) -> Malformation:
    fields = ("record_id", "customer_id") + (
        ("merchant_id",) if record_type == TRANSACTIONS else ()
    )
    field = fields[int(rng.random() * len(fields))]
    return Malformation(
        encode_valid({**record, field: ""}),
        f"empty {field}",
        customer_intact=field != "customer_id",
    )


_TX = frozenset({TRANSACTIONS})

#: Every kind of malformation, by name.
KINDS: dict[str, MalformedKind] = {
    kind.name: kind
    for kind in (
        MalformedKind("not_json", _not_json),
        MalformedKind("truncated_json", _truncated),
        MalformedKind("not_an_object", _not_object),
        MalformedKind("empty_value", _empty),
        MalformedKind("non_utf8", _non_utf8),
        MalformedKind("oversized", _oversized, weight=0.05),
        MalformedKind("missing_field", _missing_field),
        MalformedKind("wrong_type", _wrong_type),
        MalformedKind("non_positive_amount", _non_positive_amount, _TX),
        MalformedKind("non_finite_amount", _non_finite_amount, _TX),
        MalformedKind("unknown_currency", _unknown_currency, _TX),
        MalformedKind("unknown_country", _unknown_country),
        MalformedKind("future_event_time", _future_event_time),
        MalformedKind("empty_id", _empty_id),
    )
}


class MalformedMaker:
    """Breaks valid records, choosing a kind that applies to the record's type by weight."""

    __slots__ = ("_choices", "_max_record_bytes", "_rng")

    def __init__(
        self, rng: random.Random, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    ) -> None:
        self._rng = rng
        self._max_record_bytes = max_record_bytes
        self._choices: dict[str, tuple[list[MalformedKind], list[float]]] = {}
        for record_type in RECORD_TYPES:
            kinds = [k for k in KINDS.values() if record_type in k.applies_to]
            self._choices[record_type] = (
                kinds,
                list(itertools.accumulate(k.weight for k in kinds)),
            )

    def make(self, record_type: str, record: dict[str, Any]) -> tuple[str, Malformation]:
        """Break ``record`` (a valid record of ``record_type``); returns the kind and the result."""
        kinds, cdf = self._choices[record_type]
        kind = kinds[bisect.bisect_right(cdf, self._rng.random() * cdf[-1])]
        return kind.name, kind.make(self._rng, record, record_type, self._max_record_bytes)
