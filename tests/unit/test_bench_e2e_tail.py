"""The e2e benchmark's tail tools: latency over time per bucket, and the ramp's verdict."""

from bench.scenarios.e2e_ramp import Step
from shared.latency_picture import BUCKET_S, buckets, svg, text_rows


def test_a_checkpoint_spike_shows_in_its_own_bucket() -> None:
    start = 1_000_000
    raw_at = [start + i * 100 for i in range(200)]  # 20 s of alerts, one every 100 ms
    latency = [20.0] * 200
    latency[120:130] = [3_000.0] * 10  # a stall 12-13 s in
    series = buckets(raw_at, latency)
    assert [b.start_s for b in series] == [0, BUCKET_S, 2 * BUCKET_S, 3 * BUCKET_S]
    spiked = [b for b in series if b.max_ms == 3_000]
    assert [b.start_s for b in spiked] == [10.0]
    assert spiked[0].p99_ms == 3_000 and spiked[0].p50_ms == 20
    assert all(b.max_ms == 20 for b in series if b not in spiked)


def test_the_picture_has_a_line_per_percentile_and_the_text_a_row_per_bucket() -> None:
    series = buckets([0, 6_000, 12_000], [10.0, 200.0, 5_000.0])
    drawing = svg("run <1k>", series)
    assert drawing.count("<polyline") == 3 and "run &lt;1k&gt;" in drawing
    assert len(text_rows(series).splitlines()) == 1 + len(series)


def test_a_backlog_that_only_wobbles_is_sustained_one_that_grows_is_not() -> None:
    wobbling = Step(4000, delivered=240_000, seconds=60.0)
    wobbling.samples = [(t, {"ingest": 900 + (t % 10) * 100}) for t in range(5, 65, 5)]
    assert wobbling.sustained
    growing = Step(8000, delivered=480_000, seconds=60.0)
    growing.samples = [(t, {"ingest": 1_000, "velocity": t * 500}) for t in range(5, 65, 5)]
    assert growing.growth()["velocity"] > 8000 and not growing.sustained
