"""At least ``COUNT`` transactions by one customer within ``WINDOW_MS`` of event time.

The sliding window is approximated by hopping windows of ``WINDOW_MS`` every ``HOP_MS``: a record
alerts when any window containing it holds ``COUNT`` or more of the customer's transactions. That
never alerts on transactions spread over more than ``WINDOW_MS`` (a window is that long), and it
catches every burst that fits in ``WINDOW_MS - HOP_MS``; the state per customer is one counter per
hop instead of a list of timestamps. Records up to one window late still count.
"""

from __future__ import annotations

from typing import Any

from shared.detector import Context, Window, detector

RULE = "transactions_per_window"
COUNT = 5
WINDOW_MS = 60_000
HOP_MS = 5_000


@detector(
    name="velocity",
    version="1.0.0",
    inputs=["transactions"],
    state=[Window("transactions", size_ms=WINDOW_MS, hop_ms=HOP_MS, grace_ms=WINDOW_MS)],
)
def detect(record: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """Count the transaction; alert if a window containing it reaches COUNT."""
    customer, at = record["customer_id"], record["event_time"]
    windows = ctx.window("transactions")
    windows.add(customer, at)
    if windows.max(customer, at) < COUNT:  # the cheap check first: most records stop here
        return []
    busiest = max(windows.windows(customer, at), key=lambda w: w.value)
    return [
        ctx.alert(
            RULE,
            severity="HIGH" if busiest.value >= 2 * COUNT else "MEDIUM",
            score=busiest.value / COUNT,
            reason=f"{busiest.value:g} transactions within {WINDOW_MS // 1000} s",
            evidence={
                "count": int(busiest.value),
                "threshold": COUNT,
                "window_start": busiest.start,
                "window_end": busiest.end,
            },
        )
    ]
