"""The shadow comparison's arithmetic: alerts matched by source record and rule, per rule, with
examples of each side, and the text `mesh shadow` prints."""

from __future__ import annotations

from typing import Any

from control.deploy.shadow_report import EXAMPLES, _by_rule, comparison_text


def alert(record: str, rule: str, reason: str = "r") -> dict[str, Any]:
    return {"source_record_id": record, "rule": rule, "customer_id": "c1", "severity": "LOW",
            "reason": reason}  # fmt: skip


def keyed(*alerts: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(a["source_record_id"], a["rule"]): a for a in alerts}


def test_alerts_are_matched_by_record_and_rule() -> None:
    live = keyed(alert("a", "large"), alert("b", "large"), alert("c", "night"))
    shadow = keyed(alert("a", "large"), alert("d", "large"), alert("c", "large"))
    rules = _by_rule(live, shadow)
    assert {r: (e["both"], e["live_only"], e["shadow_only"]) for r, e in rules.items()} == {
        "large": (1, 1, 2),  # a in both; b only live; c and d only in the shadow
        "night": (0, 1, 0),  # the same record under another rule is another alert
    }


def test_examples_are_bounded_per_side_and_rule() -> None:
    shadow = keyed(*(alert(str(i), "large") for i in range(10)))
    examples = _by_rule({}, shadow)["large"]["examples"]
    assert len(examples["shadow_only"]) == EXAMPLES and examples["live_only"] == []


def test_the_text_names_versions_counts_and_examples() -> None:
    report = {
        "detector": "big_spender", "live_version": "1.0.0", "shadow_version": "1.1.0",
        "running_s": 96.2,
        "records": {"live": 1804, "shadow": 1800, "compared": 1800},
        "live": {"replicas": 1, "records_per_s": 20.4, "cpu_percent": 3.2},
        "shadow": {"replicas": 1, "records_per_s": 19.6, "cpu_percent": 2.9},
        "rules": _by_rule(keyed(alert("a", "large")),
                          keyed(alert("a", "large"), alert("d", "large", "amount above 500"))),
    }  # fmt: skip
    assert comparison_text(report) == [
        "big_spender: live v1.0.0 vs shadow v1.1.0, shadow running 96 s",
        "records read since the shadow started: live 1804, shadow 1800; compared (read by "
        "both) 1800",
        "live   1 replica(s), 20 records/s, CPU 3 %",
        "shadow 1 replica(s), 20 records/s, CPU 3 %",
        "rule large: both 1, only live 0, only shadow 1",
        "  only shadow: record d customer c1 LOW: amount above 500",
        "total: both 1, only live 0, only shadow 1",
    ]
