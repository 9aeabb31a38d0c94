"""The seeded cast of a generated stream: customers with a home, merchants with a trade.

Every customer lives in one country, pays in its currency, and logs in from a handful of devices
and addresses of their own; every merchant has a merchant category code (MCC) and a country. The
detectors' notion of "normal" (usual country, usual devices) only exists because these habits are
stable, so they are drawn once per seed and never change during a run.
"""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass

from tools.loadgen.geography import COUNTRIES, Country

#: Common merchant category codes (ISO 18245) with their relative frequency in card traffic.
MCC_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("5411", 18.0),  # grocery stores, supermarkets
    ("5812", 12.0),  # restaurants
    ("5814", 10.0),  # fast food
    ("5541", 8.0),  # service stations
    ("5311", 5.0),  # department stores
    ("5691", 5.0),  # clothing stores
    ("5732", 3.0),  # electronics stores
    ("5912", 5.0),  # drug stores, pharmacies
    ("5999", 6.0),  # miscellaneous retail
    ("4111", 6.0),  # commuter transport
    ("4121", 4.0),  # taxis, ride hailing
    ("4814", 3.0),  # telecommunication services
    ("4900", 3.0),  # utilities
    ("5942", 2.0),  # book stores
    ("5945", 1.5),  # toy and game shops
    ("7011", 2.0),  # hotels
    ("4511", 1.5),  # airlines
    ("7832", 1.5),  # cinemas
    ("5968", 2.0),  # subscriptions
    ("7995", 0.5),  # betting, casino gambling
)

USER_AGENTS: tuple[str, ...] = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "BankApp/7.12.0 (iOS 17.4; iPhone15,2)",
    "BankApp/7.11.3 (Android 14; SM-S918B)",
)


@dataclass(frozen=True, slots=True)
class Customer:
    customer_id: str
    country: Country
    devices: tuple[str, ...]
    ips: tuple[str, ...]
    user_agents: tuple[str, ...]

    @property
    def key(self) -> bytes:
        """The Kafka key of this customer's records."""
        return self.customer_id.encode()


@dataclass(frozen=True, slots=True)
class Merchant:
    merchant_id: str
    mcc: str
    country: str


@dataclass(frozen=True, slots=True)
class Population:
    customers: tuple[Customer, ...]
    merchants: tuple[Merchant, ...]
    #: Merchants grouped by country code, so a purchase happens where the buyer is.
    merchants_by_country: dict[str, tuple[Merchant, ...]]


def build_population(seed: int, customers: int, merchants: int) -> Population:
    """Draw ``customers`` customers and ``merchants`` merchants, the same ones for the same seed.

    Every country gets at least a few merchants, so a customer who suddenly appears abroad (the
    ``new_country`` pattern) has somewhere to spend.
    """
    rng = random.Random(f"loadgen/population/{seed}")
    country_cdf = list(itertools.accumulate(c.weight for c in COUNTRIES))
    mcc_cdf = list(itertools.accumulate(w for _, w in MCC_WEIGHTS))

    def draw_country() -> Country:
        return COUNTRIES[bisect.bisect_right(country_cdf, rng.random() * country_cdf[-1])]

    people: list[Customer] = []
    seen: set[str] = set()
    while len(people) < customers:
        person = _draw_customer(rng, draw_country())
        if person.customer_id not in seen:  # ids must be unique; a 48-bit clash is rare, not never
            seen.add(person.customer_id)
            people.append(person)

    shops: list[Merchant] = []
    per_country_floor = 3
    homes = [c for c in COUNTRIES for _ in range(per_country_floor)]
    homes += [draw_country() for _ in range(max(0, merchants - len(homes)))]
    for country in homes:
        mcc = MCC_WEIGHTS[bisect.bisect_right(mcc_cdf, rng.random() * mcc_cdf[-1])][0]
        shops.append(Merchant(f"mer_{rng.getrandbits(48):012x}", mcc, country.code))
    by_country: dict[str, list[Merchant]] = {c.code: [] for c in COUNTRIES}
    for shop in shops:
        by_country[shop.country].append(shop)
    return Population(
        customers=tuple(people),
        merchants=tuple(shops),
        merchants_by_country={code: tuple(group) for code, group in by_country.items()},
    )


def _draw_customer(rng: random.Random, country: Country) -> Customer:
    devices = tuple(f"dev_{rng.getrandbits(48):012x}" for _ in range(1 + int(rng.random() * 3)))
    ips = tuple(ip_address(rng, country) for _ in range(1 + int(rng.random() * 3)))
    agents = tuple(rng.sample(USER_AGENTS, 1 + int(rng.random() * 2)))
    return Customer(f"cus_{rng.getrandbits(48):012x}", country, devices, ips, agents)


def ip_address(rng: random.Random, country: Country) -> str:
    """An IPv4 address in the block this generator hands out in ``country``."""
    return f"{country.ip_octet}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
