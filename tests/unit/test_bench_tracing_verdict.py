"""The tracing benchmark's verdict on the aim (at most 5 % cost at 1 % sampling)."""

from __future__ import annotations

from bench.scenarios.tracing import _one_percent_verdict


def test_a_cost_within_five_percent_meets_the_aim() -> None:
    verdict = _one_percent_verdict({"1%": 0.96, "headers": 0.98}, 400.0, 10.0)
    assert "AIM (cost <= 5 % at 1 %) MET: cost 4.0%" in verdict
    assert "variant headers) 2.0%" in verdict
    assert "400 ns = 4.0% of off's CPU per record" in verdict


def test_a_larger_cost_is_reported_as_not_met_with_the_header_reads_share() -> None:
    verdict = _one_percent_verdict({"1%": 0.868, "headers": 0.843}, 435.0, 10.0)
    assert "NOT MET: cost 13.2%" in verdict
    assert "variant headers) 15.7%" in verdict
