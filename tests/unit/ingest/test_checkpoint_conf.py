"""The counts' shuffle partitions read back from their checkpoint's offset log."""

from __future__ import annotations

import json
from pathlib import Path

from services.ingest.checkpoint_conf import checkpointed_shuffle_partitions


def _entry(offsets: Path, batch: int, partitions: str | None) -> None:
    conf = {} if partitions is None else {"spark.sql.shuffle.partitions": partitions}
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": conf}
    offsets.mkdir(parents=True, exist_ok=True)
    (offsets / str(batch)).write_text(f'v1\n{json.dumps(metadata)}\n{{"raw.x":{{"0":5}}}}')


def test_a_new_checkpoint_has_no_count(tmp_path):
    assert checkpointed_shuffle_partitions(tmp_path / "counts") is None
    (tmp_path / "counts" / "offsets").mkdir(parents=True)
    assert checkpointed_shuffle_partitions(tmp_path / "counts") is None


def test_the_newest_entry_gives_the_count_the_query_keeps(tmp_path):
    offsets = tmp_path / "counts" / "offsets"
    _entry(offsets, 9, "4")
    _entry(offsets, 10, "4")
    (offsets / ".10.crc").write_bytes(b"\0")  # Spark's checksum files are not entries
    assert checkpointed_shuffle_partitions(tmp_path / "counts") == 4


def test_an_unreadable_newest_entry_falls_back_to_the_one_before(tmp_path):
    offsets = tmp_path / "counts" / "offsets"
    _entry(offsets, 2, "3")
    (offsets / "3").write_text("v1\n{not json")  # a torn write
    _entry(offsets, 11, None)  # no conf: says nothing
    assert checkpointed_shuffle_partitions(tmp_path / "counts") == 3
