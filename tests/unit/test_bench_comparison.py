"""The comparison table: each detector row against each peer measured in the same run."""

from __future__ import annotations

import pytest

from bench.comparison import attach, comparison_table, ratios
from bench.result import Result


def _rows() -> list[Result]:
    return [
        Result("raw_pipe", 200_000, 2.0),
        Result("raw_pipe_avro_feed", 100_000, 1.0),  # 100 000/s
        Result("kstreams_large_amount", 80_000, 1.0),  # 80 000/s
        Result("detector_large_amount", 60_000, 1.0),  # 60 000/s
        Result("detector_velocity", 20_000, 1.0),
        Result("kstreams_hopping", 0, 0.0),  # a failed measurement: no ratio to it
    ]


def test_each_detector_is_divided_by_each_peer_of_the_run() -> None:
    table_of = ratios(_rows())
    assert set(table_of) == {"detector_large_amount", "detector_velocity"}
    assert table_of["detector_large_amount"] == pytest.approx(
        {"raw_pipe_avro_feed": 0.6, "kstreams_large_amount": 0.75}
    )
    assert table_of["detector_velocity"]["kstreams_large_amount"] == pytest.approx(0.25)


def test_the_ratios_go_into_the_rows_for_the_json_lines() -> None:
    rows = _rows()
    attach(rows)
    assert rows[3].extra == {"vs_raw_pipe_avro_feed": 0.6, "vs_kstreams_large_amount": 0.75}
    assert rows[0].extra == {}


def test_the_table_names_the_peers_and_their_rates() -> None:
    text = comparison_table(_rows())
    assert text is not None
    header, _, first, second, footer = text.splitlines()
    assert header.split()[-2:] == ["pipe", "ks_stateless"]
    assert first.split() == ["detector_large_amount", "0.60", "0.75"]
    assert second.split() == ["detector_velocity", "0.20", "0.25"]
    assert "pipe 100,000/s" in footer and "ks_stateless 80,000/s" in footer


def test_no_table_without_both_sides() -> None:
    assert comparison_table([Result("detector_velocity", 1, 1.0)]) is None
    assert comparison_table([Result("raw_pipe_avro_feed", 1, 1.0)]) is None
