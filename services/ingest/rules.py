"""Business rules of every record type: the one place to read and change them.

A rule is a name (its error code), a check written as a PySpark column expression over the
record's typed fields (``r.amount``, ``r.currency`` ...), the field it is about and a message. A
record is valid when every check is true; the first rule that fails (in the order listed) names
the error. Checks run inside the JVM as SQL expressions, so they cost nothing per record in Python.

Schema-level checks (well-formed JSON object, required fields present, field types) come from the
Avro schema of the type and need no rule here; the checks below are those the schema cannot say.

To add a record type: add its schema under schemas/<name>/v1.avsc, register it in ``RECORD_TYPES``
with its rules, and declare ``raw.<type>`` and ``records.<type>`` in infra/topics.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.ingest.iso_codes import COUNTRIES, CURRENCIES

#: How far in the future an event time may be, relative to ingest time (clock skew allowance).
MAX_FUTURE_MS = 5 * 60 * 1000
#: The earliest plausible event time (2000-01-01T00:00:00Z); older means a unit or parsing error.
MIN_EVENT_TIME_MS = 946_684_800_000


@dataclass(frozen=True)
class Rule:
    """One business rule; ``check(r)`` is true for a record that passes."""

    code: str
    field: str
    message: str
    check: Callable[[Any], Any]


def _non_empty(field: str) -> Rule:
    return Rule(
        f"EMPTY_{field.upper()}",
        field,
        f"{field} must be a non-empty string",
        lambda r: r.trimmed(field) != "",
    )


def _iso_code(code: str, field: str, allowed: frozenset[str], what: str) -> Rule:
    return Rule(code, field, f"{field} must be {what}", lambda r: r[field].isin(sorted(allowed)))


#: Rules every record type shares: identity and a plausible event time.
COMMON_RULES: tuple[Rule, ...] = (
    _non_empty("record_id"),
    _non_empty("customer_id"),
    Rule(
        "EVENT_TIME_IN_FUTURE",
        "event_time",
        "event_time is more than 5 minutes after ingest time",
        lambda r: r.event_time <= r.ingest_time_ms + MAX_FUTURE_MS,
    ),
    Rule(
        "EVENT_TIME_TOO_OLD",
        "event_time",
        "event_time is before 2000-01-01 (expected epoch milliseconds)",
        lambda r: r.event_time >= MIN_EVENT_TIME_MS,
    ),
)

TRANSACTION_RULES: tuple[Rule, ...] = (
    Rule(
        "AMOUNT_NOT_POSITIVE",
        "amount",
        "amount must be a finite number greater than 0",
        lambda r: (r.amount > 0) & (r.amount < float("inf")),
    ),
    _iso_code("UNKNOWN_CURRENCY", "currency", CURRENCIES, "an upper-case ISO 4217 code"),
    _non_empty("merchant_id"),
    _iso_code("UNKNOWN_COUNTRY", "country", COUNTRIES, "an ISO 3166-1 alpha-2 code"),
)

LOGIN_RULES: tuple[Rule, ...] = (
    _iso_code("UNKNOWN_COUNTRY", "country", COUNTRIES, "an ISO 3166-1 alpha-2 code"),
    _non_empty("ip"),
    _non_empty("device_id"),
)


@dataclass(frozen=True)
class RecordTypeRules:
    """A raw record type: its Avro schema name and its business rules (after the common ones)."""

    schema: str
    rules: tuple[Rule, ...]


#: raw.<type> -> schema and rules. A raw topic whose type is not here is UNKNOWN_TYPE.
RECORD_TYPES: dict[str, RecordTypeRules] = {
    "transactions": RecordTypeRules("transaction", COMMON_RULES + TRANSACTION_RULES),
    "logins": RecordTypeRules("login", COMMON_RULES + LOGIN_RULES),
}
