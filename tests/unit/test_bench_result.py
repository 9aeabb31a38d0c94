"""The benchmark report: percentiles by nearest rank and a table with ratios."""

from bench.result import Result, percentile, table


def test_percentile_uses_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def test_table_shows_rate_and_ratio_and_dashes_for_the_unmeasured():
    baseline = Result("raw_pipe", 1000, 2.0, ratio=1.0)
    paced = Result("paced", 500, 1.0, latency_p50_ms=3.25, latency_p99_ms=9.5, paced=True)
    text = table([baseline, paced]).splitlines()
    assert "500" in text[2] and "1.00" in text[2]
    assert "3.2" in text[3] and "9.5" in text[3]
    assert text[3].split()[-1] != "1.00"
    assert baseline.rate == 500.0


def test_rows_printed_as_scenarios_finish_carry_no_header():
    rows = table([Result("ingest", 1000, 2.0)], header=False).splitlines()
    assert len(rows) == 1 and rows[0].startswith("ingest")
    assert table([Result("ingest", 1000, 2.0)]).splitlines()[0].startswith("scenario")
