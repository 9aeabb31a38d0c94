"""Counter: monotonic counts."""

from __future__ import annotations

import pytest

from shared.metrics import Counter


def test_counter_adds_increments() -> None:
    counter = Counter()
    counter.inc()
    counter.inc(5)
    counter.inc(0)
    assert counter.count == 6


def test_negative_increment_is_refused_and_count_unchanged() -> None:
    counter = Counter()
    counter.inc(3)
    with pytest.raises(ValueError, match="monotonic"):
        counter.inc(-1)
    assert counter.count == 3


@pytest.mark.parametrize("bad", [1.5, "2", None])
def test_non_integer_increment_is_refused(bad: object) -> None:
    counter = Counter()
    with pytest.raises(ValueError, match="whole numbers"):
        counter.inc(bad)  # type: ignore[arg-type]
    assert counter.count == 0


def test_integer_like_increments_count_as_plain_ints() -> None:
    class Index:
        def __index__(self) -> int:
            return 4

    counter = Counter()
    counter.inc(True)
    counter.inc(Index())  # type: ignore[arg-type]
    assert counter.count == 5
    assert type(counter.count) is int
