"""Gauge: a function read at snapshot time; no value rather than a broken snapshot."""

from __future__ import annotations

import logging

import pytest

from shared.metrics import Gauge


def test_gauge_reads_its_function_each_time() -> None:
    values = iter([1, 2.5])
    gauge = Gauge(lambda: next(values))
    assert gauge.read() == 1.0
    assert isinstance(gauge.value, float)


@pytest.mark.parametrize("result", [None, float("nan"), float("inf"), "many"])
def test_gauge_without_a_finite_number_has_no_value(result: object) -> None:
    assert Gauge(lambda: result).read() is None  # type: ignore[arg-type, return-value]


def test_a_failing_gauge_has_no_value_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> float:
        raise OSError("gone")

    gauge = Gauge(broken)
    with caplog.at_level(logging.DEBUG, logger="shared.metrics.gauge"):
        assert gauge.read() is None
        assert gauge.read() is None
    levels = [record.levelno for record in caplog.records]
    assert levels == [logging.WARNING, logging.DEBUG]


def test_a_gauge_needs_a_callable() -> None:
    with pytest.raises(ValueError, match="function"):
        Gauge(3)  # type: ignore[arg-type]
