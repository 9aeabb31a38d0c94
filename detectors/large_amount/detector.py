"""A transaction above its currency's threshold (thresholds.yaml, per ISO 4217 code).

Stateless: each record is judged alone. A currency missing from the table raises no alert: the
table is the risk team's decision, and guessing a threshold would be worse than none (ingest has
already refused unknown currencies).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from shared.detector import Context, detector

RULE = "amount_above_currency_threshold"
_TABLE = Path(__file__).parent / "thresholds.yaml"
THRESHOLDS: dict[str, float] = {
    str(code): float(limit) for code, limit in yaml.safe_load(_TABLE.read_text()).items()
}


@detector(name="large_amount", version="1.0.0", inputs=["transactions"])
def detect(record: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """Alert on an amount strictly above the currency's threshold."""
    threshold = THRESHOLDS.get(record["currency"])
    amount = record["amount"]
    if threshold is None or amount <= threshold:
        return []
    ratio = amount / threshold
    return [
        ctx.alert(
            RULE,
            severity="CRITICAL" if ratio >= 5 else "HIGH",
            score=ratio,
            reason=f"amount {amount:g} {record['currency']} is {ratio:.1f}x the threshold",
            evidence={"amount": amount, "currency": record["currency"], "threshold": threshold},
        )
    ]
