"""Well-formed raw records, shaped the way customers' systems send them.

Field names and rules are the raw-record contract of ARCHITECTURE.md: every record has
``record_id``, ``customer_id`` and ``event_time``; a transaction adds ``amount``, ``currency``,
``merchant_id`` and ``country``; a login adds ``country``, ``ip``, ``device_id`` and ``success``.
A few optional fields (``mcc``, ``channel``, ``user_agent``) ride along, as they would in real
feeds, so the ingest is exercised with more than the minimum.
"""

from __future__ import annotations

import json
import random
from typing import Any

from tools.loadgen.amounts import AmountSampler
from tools.loadgen.geography import Country
from tools.loadgen.population import (
    USER_AGENTS,
    Customer,
    Merchant,
    Population,
    ip_address,
)

TRANSACTIONS = "transactions"
LOGINS = "logins"
#: Record type (also the topic suffix: ``raw.transactions``) -> its required fields.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    TRANSACTIONS: (
        "record_id",
        "customer_id",
        "event_time",
        "amount",
        "currency",
        "merchant_id",
        "country",
    ),
    LOGINS: ("record_id", "customer_id", "event_time", "country", "ip", "device_id", "success"),
}
RECORD_TYPES: tuple[str, ...] = tuple(REQUIRED_FIELDS)

#: Share of logins that succeed.
LOGIN_SUCCESS_SHARE = 0.94
_CHANNELS = ("pos", "pos", "pos", "contactless", "contactless", "ecom", "ecom", "atm")
_ID_PREFIX = {TRANSACTIONS: "txn_", LOGINS: "lgn_"}

#: Compact JSON, the way most producers send it; built once because json.dumps(**kw) is slow.
_ENCODER = json.JSONEncoder(separators=(",", ":"))


def encode(record: dict[str, Any]) -> bytes:
    """The record as the UTF-8 JSON bytes of one Kafka message value."""
    return _ENCODER.encode(record).encode()


class RecordFactory:
    """Builds valid records for a population; the caller decides who, when and where."""

    __slots__ = ("_amounts", "_population", "_rng")

    def __init__(self, rng: random.Random, population: Population) -> None:
        self._rng = rng
        self._population = population
        self._amounts = AmountSampler(rng)

    @property
    def amounts(self) -> AmountSampler:
        return self._amounts

    def record_id(self, record_type: str) -> str:
        return f"{_ID_PREFIX[record_type]}{self._rng.getrandbits(64):016x}"

    def merchant_in(self, country: str) -> Merchant:
        """A merchant of ``country``; the first ones of each country are the popular ones."""
        shops = self._population.merchants_by_country[country]
        r = self._rng.random()
        return shops[int(r * r * len(shops))]

    def transaction(
        self,
        customer: Customer,
        event_time: int,
        *,
        country: Country | None = None,
        amount: float | int | None = None,
    ) -> dict[str, Any]:
        """A purchase by ``customer``: at home unless ``country`` says otherwise."""
        where = country or customer.country
        merchant = self.merchant_in(where.code)
        rng = self._rng
        return {
            "record_id": self.record_id(TRANSACTIONS),
            "customer_id": customer.customer_id,
            "event_time": event_time,
            "amount": self._amounts.ordinary(where.currency) if amount is None else amount,
            "currency": where.currency,
            "merchant_id": merchant.merchant_id,
            "country": where.code,
            "mcc": merchant.mcc,
            "channel": _CHANNELS[int(rng.random() * len(_CHANNELS))],
        }

    def login(
        self, customer: Customer, event_time: int, *, country: Country | None = None
    ) -> dict[str, Any]:
        """A login by ``customer`` from one of their usual devices, or from abroad if told."""
        rng = self._rng
        if country is None:
            country = customer.country
            ip = customer.ips[int(rng.random() * len(customer.ips))]
            device_id = customer.devices[int(rng.random() * len(customer.devices))]
            agent = customer.user_agents[int(rng.random() * len(customer.user_agents))]
            success = rng.random() < LOGIN_SUCCESS_SHARE
        else:  # someone else, somewhere else, on a device never seen: the account is taken over
            ip = ip_address(rng, country)
            device_id = f"dev_{rng.getrandbits(48):012x}"
            agent = USER_AGENTS[int(rng.random() * len(USER_AGENTS))]
            success = True
        return {
            "record_id": self.record_id(LOGINS),
            "customer_id": customer.customer_id,
            "event_time": event_time,
            "country": country.code,
            "ip": ip,
            "device_id": device_id,
            "success": success,
            "user_agent": agent,
        }

    def build(self, record_type: str, customer: Customer, event_time: int) -> dict[str, Any]:
        """An ordinary record of ``record_type``."""
        if record_type == TRANSACTIONS:
            return self.transaction(customer, event_time)
        return self.login(customer, event_time)


__all__ = [
    "LOGINS",
    "RECORD_TYPES",
    "REQUIRED_FIELDS",
    "TRANSACTIONS",
    "RecordFactory",
    "encode",
]
