"""What one delivery attempt gave, whatever the channel."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    #: whether another attempt may succeed (a 400 will not; a 503 or a timeout may)
    retriable: bool
    status: int | None
    error: str | None
    seconds: float
    #: the receiver's Retry-After, in seconds, if it gave one
    retry_after_s: float | None = None
