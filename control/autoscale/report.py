"""The autoscaler's last look at one detector, as `mesh status` prints it under the detector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.detector.autoscale import AutoscalePolicy

#: A look older than this many intervals is stale: the autoscaler stopped looking.
STALE_INTERVALS = 4


def autoscale_line(
    policy: AutoscalePolicy | None,
    look: Mapping[str, Any] | None,
    age_s: float | None,
    interval_s: float,
) -> str:
    """``autoscale min 1 max 6 lag/replica 5 000: lag 48 210 / 5 000 per replica -> 6 (max)``,
    ``autoscale off``, or why there is no recent decision."""
    if policy is None:
        return "autoscale off"
    bounds = f"autoscale {policy_text(policy)}"
    if look is None or age_s is None:
        return f"{bounds}: no decision yet (the autoscaler has not looked: `mesh up` starts it)"
    if age_s > STALE_INTERVALS * interval_s:
        return f"{bounds}: last look {age_s:.0f} s ago (is the autoscaler running?)"
    if look.get("error"):
        return f"{bounds}: {look['error']}"
    return f"{bounds}: {look.get('reason', '?')}"


def policy_text(policy: AutoscalePolicy | None) -> str:
    """``min 1 max 6 lag/replica 5 000 down after 300 s``, or ``off``."""
    if policy is None:
        return "off"
    return (
        f"min {policy.min} max {policy.max} lag/replica {policy.lag_per_replica:,} "
        f"down after {policy.scale_down_after_s:g} s"
    ).replace(",", " ")
