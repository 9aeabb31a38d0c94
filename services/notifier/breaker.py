"""A circuit breaker per channel: a receiver that keeps failing is left alone for a while.

CLOSED: attempts go through; ``failure_threshold`` failures in a row open it. OPEN: no attempt
for ``cooldown_s`` (the deliveries wait in the book, their attempts not spent). HALF_OPEN after
the cool-down: one trial attempt at a time; a success closes it, a failure opens it again. So a
dead receiver costs one attempt per cool-down instead of every pending delivery's retries, and
the other channels never notice it.
"""

from __future__ import annotations

from dataclasses import dataclass

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"


@dataclass
class Breaker:
    failure_threshold: int = 5
    cooldown_s: float = 30.0
    state: str = CLOSED
    failures: int = 0
    opened_at_s: float = 0.0
    trial_in_flight: bool = False

    def allows(self, now_s: float) -> bool:
        """Whether an attempt may start now (a HALF_OPEN breaker lets one through)."""
        if self.state == OPEN and now_s - self.opened_at_s >= self.cooldown_s:
            self.state = HALF_OPEN
        if self.state == CLOSED:
            return True
        if self.state == HALF_OPEN and not self.trial_in_flight:
            self.trial_in_flight = True
            return True
        return False

    def reopens_at(self) -> float:
        """When an OPEN breaker lets the next trial through."""
        return self.opened_at_s + self.cooldown_s

    def record(self, succeeded: bool, now_s: float) -> None:
        """The outcome of an attempt it allowed."""
        if succeeded:
            self.state, self.failures, self.trial_in_flight = CLOSED, 0, False
            return
        self.failures += 1
        if self.state == HALF_OPEN or self.failures >= self.failure_threshold:
            self.state, self.opened_at_s, self.trial_in_flight = OPEN, now_s, False
