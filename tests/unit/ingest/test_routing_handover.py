"""Routing's handover to a fresh checkpoint: each raw partition starts exactly where the old
checkpoint's last committed batch left it, the ones left out are held at theirs and taken back
there, and a crash half-way leaves a state a start completes
(services/ingest/routing_handover.py)."""

from __future__ import annotations

import json
from pathlib import Path

from services.ingest.routing_handover import (
    EARLIEST,
    HANDOVER_FILE,
    KEPT_REPLACED,
    LATEST,
    NEXT_FILE,
    REPLACED,
    ROUTING,
    Handover,
    first_start,
    hand_over,
    load,
)

RAW = {"raw.t": [0, 1, 2], "raw.l": [0, 1]}


def _committed(checkpoints: Path, batch: int, offsets: dict[str, dict[str, int]]) -> None:
    """A routing checkpoint whose last committed batch ends at ``offsets``, as Spark writes it
    (a version line, the batch's metadata, then the source's offsets)."""
    folder = checkpoints / ROUTING
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    (folder / "commits").mkdir(exist_ok=True)
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1}
    (folder / "offsets" / str(batch)).write_text(
        f"v1\n{json.dumps(metadata)}\n{json.dumps(offsets)}\n"
    )
    (folder / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_a_lost_partition_is_held_at_its_offset_and_the_others_start_where_they_were(
    tmp_path: Path,
) -> None:
    _committed(tmp_path, 7, {"raw.t": {"0": 10, "1": 20, "2": 30}, "raw.l": {"0": 5, "1": 6}})
    handover = hand_over(tmp_path, {("raw.t", 1)}, RAW)
    assert handover.held == {"raw.t": {1: 20}}
    assert handover.start == {"raw.t": {0: 10, 2: 30}, "raw.l": {0: 5, 1: 6}}
    assert not (tmp_path / ROUTING).exists()  # a fresh checkpoint for the successor
    assert (tmp_path / REPLACED / "1" / "offsets" / "7").is_file()
    assert load(tmp_path) == handover

    options = handover.source_options("raw\\..*")
    assert json.loads(options["assign"]) == {"raw.l": [0, 1], "raw.t": [0, 2]}
    assert json.loads(options["startingOffsets"]) == {
        "raw.l": {"0": 5, "1": 6},
        "raw.t": {"0": 10, "2": 30},
    }
    assert "subscribePattern" not in options


def test_a_held_partition_is_taken_back_at_its_offset_and_routing_reads_by_pattern_again(
    tmp_path: Path,
) -> None:
    _committed(tmp_path, 7, {"raw.t": {"0": 10, "1": 20, "2": 30}, "raw.l": {"0": 5, "1": 6}})
    hand_over(tmp_path, {("raw.t", 1)}, RAW)
    _committed(tmp_path, 3, {"raw.t": {"0": 400, "2": 500}, "raw.l": {"0": 60, "1": 70}})
    back = hand_over(tmp_path, set(), RAW)
    assert back.held == {}
    assert back.start == {"raw.t": {0: 400, 1: 20, 2: 500}, "raw.l": {0: 60, 1: 70}}
    options = back.source_options("raw\\..*")
    assert options["subscribePattern"] == "raw\\..*" and "assign" not in options


def test_a_handover_before_its_successor_committed_keeps_where_that_one_started(
    tmp_path: Path,
) -> None:
    """A second partition lost before the first handover's query committed (or planned) any
    batch: its checkpoint says nothing yet, so the start offsets the handover gave it stand
    (not the partitions' earliest: every retained record routed again)."""
    _committed(tmp_path, 7, {"raw.t": {"0": 10, "1": 20, "2": 30}, "raw.l": {"0": 5, "1": 6}})
    hand_over(tmp_path, {("raw.t", 1)}, RAW)
    second = hand_over(tmp_path, {("raw.t", 1), ("raw.l", 0)}, RAW)
    assert second.start == {"raw.t": {0: 10, 2: 30}, "raw.l": {1: 6}}
    assert second.held == {"raw.t": {1: 20}, "raw.l": {0: 5}}


def test_routing_that_never_ran_hands_over_from_where_it_was_told_to_start(
    tmp_path: Path,
) -> None:
    assert hand_over(tmp_path, {("raw.t", 1)}, RAW, LATEST).start["raw.l"] == {0: LATEST, 1: LATEST}
    assert first_start("latest") == LATEST and first_start("earliest") == EARLIEST


def test_a_partition_routing_never_read_starts_at_its_earliest(tmp_path: Path) -> None:
    _committed(tmp_path, 0, {"raw.t": {"0": 10, "1": 20, "2": 30}})
    handover = hand_over(tmp_path, {("raw.l", 0)}, RAW)  # raw.l appeared since
    assert handover.held == {"raw.l": {0: EARLIEST}}
    assert handover.start["raw.l"] == {1: EARLIEST}


def test_only_the_newest_replaced_checkpoints_are_kept(tmp_path: Path) -> None:
    for batch in range(KEPT_REPLACED + 2):
        _committed(tmp_path, batch, {"raw.t": {"0": batch, "1": 0, "2": 0}})
        hand_over(tmp_path, {("raw.t", 1)} if batch % 2 == 0 else set(), RAW)
    kept = sorted(int(p.name) for p in (tmp_path / REPLACED).iterdir())
    assert kept == list(range(3, KEPT_REPLACED + 3))


def test_a_crash_before_the_checkpoint_moved_leaves_the_old_one_running(tmp_path: Path) -> None:
    _committed(tmp_path, 7, {"raw.t": {"0": 10, "1": 20, "2": 30}})
    (tmp_path / NEXT_FILE).write_text(json.dumps({"start": {"raw.t": {"0": 10}}, "held": {}}))
    assert load(tmp_path) is None
    assert not (tmp_path / NEXT_FILE).exists()


def test_a_crash_after_the_checkpoint_moved_completes_the_handover(tmp_path: Path) -> None:
    document = {"start": {"raw.t": {"0": 10, "2": 30}}, "held": {"raw.t": {"1": 20}}}
    (tmp_path / NEXT_FILE).write_text(json.dumps(document))
    assert load(tmp_path) == Handover({"raw.t": {0: 10, 2: 30}}, {"raw.t": {1: 20}})
    assert (tmp_path / HANDOVER_FILE).is_file() and not (tmp_path / NEXT_FILE).exists()


def test_routing_that_never_handed_over_has_no_handover(tmp_path: Path) -> None:
    _committed(tmp_path, 7, {"raw.t": {"0": 10}})
    assert load(tmp_path) is None
