"""Snapshot builders shared by the aggregator's unit tests."""

from __future__ import annotations

from services.metrics_aggregator.snapshots import Snapshot


def counter(instance: str, ts: int, count: int) -> Snapshot:
    return Snapshot(instance, "COUNTER", ts, count)


def gauge(instance: str, ts: int, value: float) -> Snapshot:
    return Snapshot(instance, "GAUGE", ts, None, {"value": value})


def meter(instance: str, ts: int, count: int, rate: float) -> Snapshot:
    rates = {"m1_rate": rate, "m5_rate": rate / 2, "m15_rate": rate / 4, "mean_rate": rate / 8}
    return Snapshot(instance, "METER", ts, count, rates)


def timer(instance: str, ts: int, count: int, **stats: float) -> Snapshot:
    return Snapshot(instance, "TIMER", ts, count, stats)
