"""Keys and instance ids: ``<instance id>/<name>{k=v,...}``; ids never contain '/'."""

from __future__ import annotations

import os
import re
import socket
import time

import pytest

from shared.metrics import instance_id, metric_key, snapshot_key
from shared.metrics.keys import tag_items


def test_a_metric_without_tags_has_the_plain_key() -> None:
    assert metric_key("svc@h:1:2", "records.in") == "svc@h:1:2/records.in"


def test_own_tags_are_appended_sorted_by_key() -> None:
    key = metric_key("svc@h:1:2", "ingest.rows.in", {"query": "routing", "a": "1"})
    assert key == "svc@h:1:2/ingest.rows.in{a=1,query=routing}"


def test_snapshot_key_leaves_common_tags_out() -> None:
    record = {
        "instance_id": "i@h:1:2",
        "name": "lag",
        "tags": {"detector": "velocity", "partition": "3"},
    }
    assert snapshot_key(record, {"detector": "velocity"}) == "i@h:1:2/lag{partition=3}"
    assert snapshot_key(record) == "i@h:1:2/lag{detector=velocity,partition=3}"


@pytest.mark.parametrize("tags", [{"a": "x,y"}, {"a=b": "c"}, {"a": "{"}, {"": "v"}, {"a": 1}])
def test_tags_that_would_blur_keys_are_refused(tags: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="tag"):
        tag_items(tags)


def test_instance_id_has_the_documented_shape() -> None:
    found = instance_id("detector-velocity-r1-0")
    after = int(time.time() * 1000)
    match = re.fullmatch(r"detector-velocity-r1-0@([^/:]+):(\d+):(\d+)", found)
    assert match is not None, found
    assert match.group(1) == socket.gethostname().replace("/", "")
    assert int(match.group(2)) == os.getpid()
    assert after - 3_600_000 < int(match.group(3)) <= after  # when the process first asked


def test_instance_id_is_stable_per_name_and_shares_the_process_start() -> None:
    first, again, other = instance_id("a"), instance_id("a"), instance_id("b")
    assert first == again
    assert other != first
    assert first.rsplit(":", 1)[1] == other.rsplit(":", 1)[1]


def test_instance_id_strips_slashes() -> None:
    assert instance_id("ingest/driver").startswith("ingestdriver@")
    assert "/" not in instance_id("ingest/driver")


def test_instance_id_needs_a_name() -> None:
    with pytest.raises(ValueError, match="name"):
        instance_id("/")
