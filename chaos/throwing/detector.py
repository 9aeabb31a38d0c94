"""The echo detector with a flaw: a lookup that always times out for one merchant.

It raises :class:`RetriableError` on every transaction of THROWING_MERCHANT (the smoke driver's
marked records), so the runtime retries each a bounded number of times and then dead-letters it;
every other transaction gets its one alert, as the echo detector's does.
"""

from __future__ import annotations

from typing import Any

from chaos.smoke import THROWING_MERCHANT
from shared.detector import Context, RetriableError, detector


@detector(name="throwing", version="1.0.0", inputs=["transactions"])
def detect(record: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    if record["merchant_id"] == THROWING_MERCHANT:
        raise RetriableError(f"merchant lookup timed out for {THROWING_MERCHANT} (it always does)")
    return [ctx.alert("echo", severity="LOW", score=0.0, reason="smoke test")]
