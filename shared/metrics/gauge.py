"""Gauge: a value read when a snapshot is taken (consumer lag, state size, memory).

Reading a gauge calls code that belongs to someone else, on the reporter's thread, so a gauge
never lets that code break reporting: a function that raises, returns None or returns something
that is not a finite number yields no value, and the snapshot simply leaves the gauge out.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import ClassVar

log = logging.getLogger(__name__)

#: What a gauge calls: a number, or None for "no value right now".
GaugeFn = Callable[[], float | int | None]


class Gauge:
    """A named callable. ``fn`` runs on the reporter's thread: it must be safe to call there."""

    __slots__ = ("_warned", "fn")
    TYPE: ClassVar[str] = "GAUGE"

    def __init__(self, fn: GaugeFn) -> None:
        if not callable(fn):
            raise ValueError(f"a gauge needs a function returning a number, got {fn!r}")
        self.fn = fn
        self._warned = False

    def read(self) -> float | None:
        """The value now, or None (the snapshot skips the gauge). Never raises."""
        try:
            value = self.fn()
            if value is None:
                return None
            number = float(value)
        except Exception:
            # Once at WARNING so a broken gauge is noticed, then quietly (every 10 s otherwise).
            level = logging.DEBUG if self._warned else logging.WARNING
            log.log(level, "gauge function %r failed; the gauge is skipped", self.fn, exc_info=True)
            self._warned = True
            return None
        return number if math.isfinite(number) else None

    @property
    def value(self) -> float | None:
        return self.read()

    def __repr__(self) -> str:
        return f"Gauge({self.fn!r})"
