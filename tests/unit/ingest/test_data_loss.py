"""Finding raw records retention removed before ingest read them, from a checkpoint's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.ingest.config import IngestConfig
from services.ingest.data_loss import (
    SkippedRange,
    query_checkpoints,
    resume_offsets,
    skipped_ranges,
    summary,
)
from shared.errors import ConfigError

METADATA = {
    "batchWatermarkMs": 0,
    "batchTimestampMs": 1,
    "conf": {"spark.sql.shuffle.partitions": "4"},
}


def _batch(folder: Path, batch: int, offsets: dict, committed: bool) -> None:
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    (folder / "commits").mkdir(exist_ok=True)
    lines = ["v1", json.dumps(METADATA), json.dumps(offsets)]
    (folder / "offsets" / str(batch)).write_text("\n".join(lines))
    if committed:
        (folder / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_a_query_resumes_at_the_end_of_its_last_committed_batch(tmp_path: Path) -> None:
    _batch(tmp_path, 0, {"raw.t": {"0": 10, "1": 12}}, committed=True)
    _batch(tmp_path, 1, {"raw.t": {"0": 20, "1": 25}}, committed=True)
    _batch(tmp_path, 2, {"raw.t": {"0": 30, "1": 35}}, committed=False)  # run again from 1's end
    assert resume_offsets(tmp_path) == {"raw.t": {0: 20, 1: 25}}


def test_a_query_that_never_committed_resumes_at_its_first_start(tmp_path: Path) -> None:
    _batch(tmp_path, 0, {"raw.t": {"0": 10}}, committed=False)
    (tmp_path / "sources" / "0").mkdir(parents=True)
    (tmp_path / "sources" / "0" / "0").write_text('\x00v1\n{"raw.t":{"0":4}}')
    assert resume_offsets(tmp_path) == {"raw.t": {0: 4}}


def test_a_query_that_never_started_has_nothing_to_resume(tmp_path: Path) -> None:
    assert resume_offsets(tmp_path) is None


def test_a_gap_is_a_range_from_the_resume_offset_to_the_earliest_record_left() -> None:
    resume = {"raw.t": {0: 20, 1: 25, 2: 7}, "raw.gone": {0: 3}}
    earliest = {("raw.t", 0): 50, ("raw.t", 1): 25, ("raw.t", 2): 0}  # raw.gone: topic deleted
    assert skipped_ranges("routing", resume, earliest) == [
        SkippedRange("routing", "raw.t", 0, 20, 50)
    ]


def test_the_summary_counts_what_routing_skips_and_names_the_ranges() -> None:
    ranges = [
        SkippedRange("counts", "raw.t", 0, 20, 50),
        SkippedRange("routing", "raw.t", 0, 25, 50),
    ]
    text = summary(ranges)
    assert text.startswith("25 raw records skipped: ")
    assert "routing skips offsets 25-49 of raw.t[0] (25 records removed by retention" in text


def test_only_folders_with_an_offset_log_are_queries(tmp_path: Path) -> None:
    _batch(tmp_path / "routing", 0, {"raw.t": {"0": 1}}, committed=True)
    (tmp_path / "stray").mkdir()
    assert list(query_checkpoints(tmp_path)) == ["routing"]
    assert query_checkpoints(tmp_path / "missing") == {}


def test_on_data_loss_takes_report_or_fail_and_names_the_variable_otherwise() -> None:
    assert not IngestConfig.from_env({}).fail_on_data_loss
    assert IngestConfig.from_env({"MESH_INGEST_ON_DATA_LOSS": "fail"}).fail_on_data_loss
    with pytest.raises(ConfigError, match="MESH_INGEST_ON_DATA_LOSS must be one of report, fail"):
        IngestConfig.from_env({"MESH_INGEST_ON_DATA_LOSS": "ignore"})
