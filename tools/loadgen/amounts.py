"""Heavy-tailed transaction amounts, realistic in every currency, never accidentally "large".

Card amounts are roughly lognormal (coffee, groceries, fuel) with a Pareto tail (flights, rent,
electronics). The tail is cut well below the large-amount threshold of the currency: only the
planted ``large_amount`` records may cross it, so the ground truth is complete.
"""

from __future__ import annotations

import math
import random

from tools.loadgen.geography import CURRENCIES, LARGE_AMOUNT_THRESHOLDS, Currency

#: Typical (median) everyday purchase, in US dollars.
MEDIAN_USD = 28.0
#: Spread of the lognormal body (natural-log standard deviation).
BODY_SIGMA = 1.0
#: Share of purchases drawn from the Pareto tail instead of the body.
TAIL_SHARE = 0.04
#: Where the tail starts (US dollars) and how heavy it is (smaller alpha = heavier).
TAIL_START_USD = 150.0
TAIL_ALPHA = 1.2
#: Ordinary amounts stay below this fraction of the currency's large-amount threshold.
ORDINARY_CEILING = 0.5


class AmountSampler:
    """Draws amounts in a given currency, rounded to that currency's minor unit."""

    __slots__ = ("_mu", "_rng")

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._mu = math.log(MEDIAN_USD)

    def ordinary(self, currency: str) -> float | int:
        """An everyday amount: heavy-tailed, positive, below ORDINARY_CEILING x threshold."""
        info = CURRENCIES[currency]
        ceiling_usd = ORDINARY_CEILING * LARGE_AMOUNT_THRESHOLDS[currency] / info.per_usd
        rng = self._rng
        while True:
            if rng.random() < TAIL_SHARE:
                usd = TAIL_START_USD * rng.paretovariate(TAIL_ALPHA)
            else:
                usd = rng.lognormvariate(self._mu, BODY_SIGMA)
            if usd < ceiling_usd:
                return to_minor_units(usd * info.per_usd, info)

    def large(self, currency: str) -> float | int:
        """An amount well above the currency's threshold (1.5x to about 20x)."""
        info = CURRENCIES[currency]
        factor = min(1.5 * self._rng.paretovariate(1.5), 20.0)
        return to_minor_units(LARGE_AMOUNT_THRESHOLDS[currency] * factor, info)


def to_minor_units(value: float, currency: Currency) -> float | int:
    """Round to the currency's minor unit (an int for zero-decimal currencies), never to zero."""
    if currency.decimals == 0:
        return max(1, round(value))
    smallest = 10.0**-currency.decimals
    return max(smallest, round(value, currency.decimals))
