"""How many replicas a detector should run, from its consumer group's lag: KEDA's Kafka scaler
rule with Kubernetes' HPA scale-down stabilisation, so operators who know those know this.

* **desired** = ceil(total lag / ``lag_per_replica``), never above ``max`` or the input's partition
  count (a replica beyond it would sit idle), never below ``min``;
* **up at once**: a desired count above the current one is run now (a burst waits for no window);
* **down slowly, one step at a time**: the count drops only when every desired count of the last
  ``scale_down_after_s`` (300 s, as the HPA's default window) was lower, and then by one replica
  per decision, so a lull between two bursts does not shed replicas the next burst needs and
  each step is one ordinary graceful rebalance of the detector's own group.

Pure logic (no clock, no broker): :class:`Recommender` is fed ``now`` and the lag, and keeps the
window's history itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shared.detector.autoscale import AutoscalePolicy


@dataclass(frozen=True)
class Decision:
    """One look at a detector: the replicas to run now and why."""

    #: Replicas to run now (the current count when nothing changes).
    replicas: int
    #: What the lag alone asks for, within min, max and the partitions.
    desired: int
    lag: int
    #: For people and the log: ``lag 48 210 / 5 000 per replica -> 6 (max)``,
    #: ``holding 4 for 212 s more``.
    reason: str
    #: Seconds until a lower desired count may stop a replica (0 when none is pending).
    holding_s: float = 0.0


@dataclass
class Recommender:
    """The decisions for one detector; remembers since when the lag has asked for fewer."""

    policy: AutoscalePolicy
    #: Since when every desired count was below the current one (None: it is not).
    lower_since: float | None = None

    def decide(self, now: float, lag: int, partitions: int, current: int) -> Decision:
        policy = self.policy
        ceiling = min(policy.max, partitions)
        wanted = math.ceil(max(lag, 0) / policy.lag_per_replica)
        desired = max(policy.min, min(wanted, ceiling))
        why = f"lag {_spaced(lag)} / {_spaced(policy.lag_per_replica)} per replica -> {desired}"
        if wanted > ceiling:
            why += " (max)" if ceiling == policy.max else f" ({partitions} partitions)"
        elif wanted < policy.min:
            why += " (min)"
        if desired >= current or current > ceiling:
            # Up at once; and a count outside the bounds (an operator just lowered max) is
            # brought inside them at once too.
            self.lower_since = None
            return Decision(max(desired, min(current, ceiling)), desired, lag, why)
        if self.lower_since is None:
            self.lower_since = now
        left = policy.scale_down_after_s - (now - self.lower_since)
        if left > 0:
            return Decision(
                current, desired, lag, f"{why}; holding {current} for {left:.0f} s more", left
            )
        return Decision(current - 1, desired, lag, f"{why}; stepping down from {current}")


def _spaced(number: int) -> str:
    """48210 -> 48 210: the thousands as the issue and `mesh status` print them."""
    return f"{number:,}".replace(",", " ")
