"""The live tail line of `mesh status`: percentiles by nearest rank, and what it says."""

from shared.kafka.recent_latency import summarize
from shared.percentiles import nearest_rank


def test_percentiles_are_nearest_rank_of_the_alerts_latencies() -> None:
    latencies = [float(n) for n in range(1, 101)]  # 1..100 ms
    recent = summarize(latencies, 60)
    assert (recent.count, recent.p50_ms, recent.p99_ms, recent.max_ms) == (100, 50, 99, 100)


def test_one_slow_alert_in_a_hundred_shows_in_max_not_in_p99() -> None:
    recent = summarize([10.0] * 99 + [5_000.0], 60)
    assert recent.p99_ms == 10 and recent.max_ms == 5_000
    assert recent.line() == (
        "raw -> alert over the last 60 s: 100 alerts, p50 10 ms, p99 10 ms, max 5000 ms"
    )


def test_a_quiet_minute_says_so_instead_of_zero_latency() -> None:
    assert summarize([], 60).line() == "no alert in the last 60 s"
    assert nearest_rank([], 99) is None
