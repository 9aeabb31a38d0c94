"""A transaction or login from a country the customer has not been seen in for 30 days.

Keyed state per customer and record type: the countries seen with when they were last seen, and
how many records there were. A customer with fewer than ``MIN_HISTORY`` earlier records has no
"usual" countries yet, so nothing is new for them. Logins and transactions keep separate histories:
a login from abroad after years of purchases at home is the account-takeover signal, whatever the
card did. The entry expires 30 days after the customer's last record (TTL), and countries not seen
for 30 days drop out of it, so the state holds only the recently active.
"""

from __future__ import annotations

from typing import Any

from shared.detector import Context, KeyValue, detector

RULE = "first_time_country"
UNSEEN_MS = 30 * 24 * 3600 * 1000
MIN_HISTORY = 3


@detector(
    name="new_country",
    version="1.0.0",
    inputs=["transactions", "logins"],
    state=[KeyValue("profiles", ttl_ms=UNSEEN_MS)],
)
def detect(record: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """Alert on a country not in the customer's last 30 days of this record type."""
    profiles = ctx.kv("profiles")
    key = f"{ctx.record_type}/{record['customer_id']}"
    country, at = record["country"], record["event_time"]
    profile = profiles.get(key) or {"n": 0, "countries": {}}
    seen: dict[str, int] = {
        c: t for c, t in profile["countries"].items() if ctx.stream_time - t <= UNSEEN_MS
    }
    alerts = []
    if profile["n"] >= MIN_HISTORY and country not in seen:
        alerts.append(
            ctx.alert(
                RULE,
                severity="HIGH" if ctx.record_type == "logins" else "MEDIUM",
                score=1.0,
                reason=f"first {ctx.record_type[:-1]} from {country} in 30 days",
                evidence={
                    "country": country,
                    "usual_countries": ",".join(sorted(seen)),
                    "history": profile["n"],
                },
            )
        )
    seen[country] = max(at, seen.get(country, 0))
    profiles.set(key, {"n": profile["n"] + 1, "countries": seen})
    return alerts
