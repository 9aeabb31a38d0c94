"""``--compare NAME``: the backtest's alerts against what deployed detector NAME raised.

The deployed detector's alerts are read from the history's ``alerts`` table for the same event
dates. An alert is matched by its rule and its source record (topic and record id), not by
alert id: ids include the detector's name, so a candidate under a new name still matches the
detector it would replace. The stored side is deduplicated first (delivery to ``alerts`` is
at-least-once; a replayed record's alert is stored twice with one id).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from shared.history_tables import EVENT_DATE

#: What makes two alerts "the same finding".
MATCH_ON = ["rule", "source_topic", "source_record_id"]
#: Example alerts shown for each rule and side.
EXAMPLES = 3
_SHOWN = ["customer_id", "source_record_id", "event_time", "severity", "reason"]


def stored_alerts(
    stored: DataFrame, name: str, date_from: dt.date | None, date_to: dt.date | None
) -> DataFrame:
    """Alerts deployed detector ``name`` raised on records of the given event dates."""
    chosen = stored.where(F.col("detector") == name)
    if date_from is not None:
        chosen = chosen.where(F.col(EVENT_DATE) >= F.lit(date_from))
    if date_to is not None:
        chosen = chosen.where(F.col(EVENT_DATE) <= F.lit(date_to))
    return chosen.dropDuplicates(MATCH_ON)


def compare(new: DataFrame, old: DataFrame) -> dict[str, Any]:
    """Per rule: alerts in both, only in the backtest (new), only deployed (old); examples."""
    a = new.select(*MATCH_ON, *[F.col(c).alias(f"new_{c}") for c in _SHOWN]).withColumn(
        "in_new", F.lit(True)
    )
    b = old.select(*MATCH_ON, *[F.col(c).alias(f"old_{c}") for c in _SHOWN]).withColumn(
        "in_old", F.lit(True)
    )
    joined = a.join(b, MATCH_ON, "full_outer").withColumn(
        "side",
        F.when(F.col("in_new").isNotNull() & F.col("in_old").isNotNull(), "both")
        .when(F.col("in_new").isNotNull(), "only_new")
        .otherwise("only_old"),
    )
    joined = joined.cache()
    try:
        per_rule: dict[str, dict[str, int]] = {}
        for row in joined.groupBy("rule", "side").count().collect():
            sides = per_rule.setdefault(row["rule"], {"both": 0, "only_new": 0, "only_old": 0})
            sides[row["side"]] = int(row["count"])
        examples: dict[str, dict[str, list[dict[str, str]]]] = {}
        for side, prefix in (("only_new", "new_"), ("only_old", "old_")):
            for rule in per_rule:
                picked = (
                    joined.where((F.col("side") == side) & (F.col("rule") == rule))
                    .orderBy(f"{prefix}event_time", "source_record_id")
                    .limit(EXAMPLES)
                    .collect()
                )
                if picked:
                    examples.setdefault(rule, {})[side] = [
                        {c: str(r[f"{prefix}{c}"]) for c in _SHOWN} for r in picked
                    ]
    finally:
        joined.unpersist()
    return {"per_rule": dict(sorted(per_rule.items())), "examples": examples}


def compare_lines(name: str, result: dict[str, Any]) -> list[str]:
    """The comparison as the command line prints it."""
    lines = [f"compared with deployed {name} (its alerts in the history, same dates)"]
    if not result["per_rule"]:
        return [*lines, "  neither raised any alert"]
    stored = sum(sides["both"] + sides["only_old"] for sides in result["per_rule"].values())
    if stored == 0:
        lines.append(f"  {name} has no stored alert for these dates: is a detector of that name "
                     "deployed (`mesh status`), and was the history job running?")  # fmt: skip
    lines.append(f"  {'rule':<28}{'both':>10}{'only new':>10}{'only old':>10}")
    for rule, sides in result["per_rule"].items():
        lines.append(
            f"  {rule:<28}{sides['both']:>10,}{sides['only_new']:>10,}{sides['only_old']:>10,}"
        )
    for rule, sides in result["examples"].items():
        for side, shown in sides.items():
            label = "only new" if side == "only_new" else "only old"
            for example in shown:
                lines.append(
                    f"  {label:<9}{rule}: {example['customer_id']} "
                    f"{example['source_record_id']} at {example['event_time']} "
                    f"({example['severity']}) {example['reason']}"
                )
    return lines
