"""Countries and currencies the generated customers and merchants live in.

A realistic subset of ISO 3166-1 alpha-2 countries, each paired with the ISO 4217 currency people
pay in there, so that a record's ``country`` and ``currency`` are consistent the way real card
traffic is. Each currency carries how many units make about one US dollar and how many decimals it
uses, so amounts look right in every currency (no cents on yen, three decimals on dinars), and a
large-amount threshold worth about the same in each. The ingest validates against ISO itself; this
table only says where *generated* traffic comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Currency:
    code: str
    #: Units of this currency worth about one US dollar.
    per_usd: float
    #: Minor-unit digits (ISO 4217 "E" column): 0 for JPY, 3 for KWD.
    decimals: int


@dataclass(frozen=True, slots=True)
class Country:
    code: str
    currency: str
    #: Relative share of customers living here.
    weight: float
    #: First octet of the IPv4 addresses handed to people here (gives logins a local flavour).
    ip_octet: int


#: Amount, in US dollars, above which the ``large_amount`` detector is expected to alert.
LARGE_AMOUNT_USD = 10_000.0

_CURRENCIES = (
    Currency("USD", 1.0, 2),
    Currency("CAD", 1.36, 2),
    Currency("MXN", 17.0, 2),
    Currency("BRL", 5.0, 2),
    Currency("ARS", 850.0, 2),
    Currency("CLP", 900.0, 0),
    Currency("COP", 4000.0, 2),
    Currency("PEN", 3.7, 2),
    Currency("GBP", 0.79, 2),
    Currency("EUR", 0.92, 2),
    Currency("CHF", 0.88, 2),
    Currency("SEK", 10.5, 2),
    Currency("NOK", 10.6, 2),
    Currency("DKK", 6.9, 2),
    Currency("PLN", 4.0, 2),
    Currency("CZK", 23.0, 2),
    Currency("HUF", 360.0, 2),
    Currency("RON", 4.6, 2),
    Currency("TRY", 32.0, 2),
    Currency("ILS", 3.7, 2),
    Currency("AED", 3.67, 2),
    Currency("SAR", 3.75, 2),
    Currency("KWD", 0.31, 3),
    Currency("BHD", 0.376, 3),
    Currency("EGP", 48.0, 2),
    Currency("NGN", 1500.0, 2),
    Currency("KES", 130.0, 2),
    Currency("ZAR", 18.5, 2),
    Currency("MAD", 10.0, 2),
    Currency("INR", 83.0, 2),
    Currency("PKR", 280.0, 2),
    Currency("CNY", 7.2, 2),
    Currency("HKD", 7.8, 2),
    Currency("TWD", 32.0, 2),
    Currency("JPY", 150.0, 0),
    Currency("KRW", 1350.0, 0),
    Currency("SGD", 1.35, 2),
    Currency("MYR", 4.7, 2),
    Currency("THB", 36.0, 2),
    Currency("IDR", 15700.0, 2),
    Currency("PHP", 56.0, 2),
    Currency("VND", 25000.0, 0),
    Currency("AUD", 1.52, 2),
    Currency("NZD", 1.65, 2),
)

_COUNTRIES = (
    Country("US", "USD", 30.0, 73),
    Country("CA", "CAD", 4.0, 24),
    Country("MX", "MXN", 3.0, 187),
    Country("BR", "BRL", 5.0, 177),
    Country("AR", "ARS", 1.5, 181),
    Country("CL", "CLP", 1.0, 190),
    Country("CO", "COP", 1.2, 191),
    Country("PE", "PEN", 0.8, 179),
    Country("GB", "GBP", 6.0, 81),
    Country("IE", "EUR", 0.8, 89),
    Country("FR", "EUR", 5.0, 90),
    Country("DE", "EUR", 6.0, 91),
    Country("ES", "EUR", 3.5, 83),
    Country("IT", "EUR", 3.5, 93),
    Country("NL", "EUR", 2.0, 145),
    Country("BE", "EUR", 1.0, 109),
    Country("PT", "EUR", 0.8, 85),
    Country("AT", "EUR", 0.8, 86),
    Country("FI", "EUR", 0.5, 87),
    Country("GR", "EUR", 0.7, 94),
    Country("CH", "CHF", 1.0, 178),
    Country("SE", "SEK", 1.0, 78),
    Country("NO", "NOK", 0.6, 84),
    Country("DK", "DKK", 0.6, 80),
    Country("PL", "PLN", 2.0, 79),
    Country("CZ", "CZK", 0.8, 88),
    Country("HU", "HUF", 0.7, 92),
    Country("RO", "RON", 0.9, 95),
    Country("TR", "TRY", 2.0, 176),
    Country("IL", "ILS", 0.7, 82),
    Country("AE", "AED", 0.8, 94),
    Country("SA", "SAR", 1.0, 95),
    Country("KW", "KWD", 0.3, 37),
    Country("BH", "BHD", 0.2, 37),
    Country("EG", "EGP", 1.2, 41),
    Country("NG", "NGN", 1.5, 102),
    Country("KE", "KES", 0.8, 105),
    Country("ZA", "ZAR", 1.2, 102),
    Country("MA", "MAD", 0.6, 105),
    Country("IN", "INR", 8.0, 49),
    Country("PK", "PKR", 1.5, 39),
    Country("CN", "CNY", 6.0, 36),
    Country("HK", "HKD", 0.8, 42),
    Country("TW", "TWD", 1.0, 61),
    Country("JP", "JPY", 5.0, 126),
    Country("KR", "KRW", 2.5, 121),
    Country("SG", "SGD", 0.7, 103),
    Country("MY", "MYR", 0.9, 60),
    Country("TH", "THB", 1.2, 58),
    Country("ID", "IDR", 2.5, 114),
    Country("PH", "PHP", 1.5, 112),
    Country("VN", "VND", 1.5, 113),
    Country("AU", "AUD", 2.0, 101),
    Country("NZ", "NZD", 0.5, 125),
)

CURRENCIES: Mapping[str, Currency] = MappingProxyType({c.code: c for c in _CURRENCIES})
COUNTRIES: tuple[Country, ...] = _COUNTRIES


def _nice(value: float) -> float:
    """Round to two significant digits, the way a risk team writes a threshold down."""
    magnitude = 10 ** (len(str(int(value))) - 2)
    return float(round(value / magnitude) * magnitude) if magnitude >= 1 else round(value, 2)


#: Per-currency amount above which a transaction is "large" (about LARGE_AMOUNT_USD).
LARGE_AMOUNT_THRESHOLDS: Mapping[str, float] = MappingProxyType(
    {c.code: _nice(LARGE_AMOUNT_USD * c.per_usd) for c in _CURRENCIES}
)


def _check_consistency() -> None:
    """Fail at import time if a country pays in a currency the table does not know."""
    for country in _COUNTRIES:
        if country.currency not in CURRENCIES:
            raise AssertionError(f"{country.code} uses unknown currency {country.currency}")


_check_consistency()
