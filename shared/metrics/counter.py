"""Counter: a monotonic count of events (errors, dead letters).

Counts travel to the aggregator as table state (latest snapshot per instance), so they must
never go down: :meth:`Counter.inc` refuses a negative increment instead of "fixing" a count.
"""

from __future__ import annotations

import operator
from typing import ClassVar


class Counter:
    """A count that only goes up.

    Thread safety: updates take no lock. One writer thread per counter (the runtime's loop) plus
    any number of readers (the reporter) is safe, since readers only read ``count``; see
    :mod:`shared.metrics` for why.
    """

    __slots__ = ("_count",)
    TYPE: ClassVar[str] = "COUNTER"

    def __init__(self) -> None:
        self._count = 0

    def inc(self, n: int = 1) -> None:
        """Add ``n`` (>= 0) events."""
        if n.__class__ is not int or n < 0:
            n = checked_increment(n)
        self._count += n

    @property
    def count(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"Counter(count={self._count})"


def checked_increment(n: object) -> int:
    """``n`` as an ``int`` if it is a whole number >= 0, else a ValueError saying what is wrong.

    The slow path of every increment: plain ints never get here unless negative.
    """
    try:
        value = operator.index(n)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"counts grow by whole numbers, got {type(n).__name__} {n!r}") from None
    if value < 0:
        raise ValueError(f"counts are monotonic: cannot add {value} (a negative increment)")
    return value
