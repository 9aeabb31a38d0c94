"""Kafka keys of metric snapshots, and the names and tags that go into them.

``<instance id>/<name>`` or ``<instance id>/<name>{k=v,...}`` with the metric's own tags sorted
by key (docs/metrics.md). Compaction keeps the latest snapshot per key, so a key must name
exactly one series of one instance: the characters that structure a key (``/`` in an instance
id, ``{`` in a name, ``,`` ``=`` ``{`` ``}`` in tags) are refused where they would make two
series collide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Tags in canonical form: (key, value) pairs sorted by key.
TagItems = tuple[tuple[str, str], ...]

_TAG_SEPARATORS = frozenset(",={}")


def check_instance_id(instance_id: str) -> str:
    if not instance_id or "/" in instance_id:
        raise ValueError(
            f"an instance id is non-empty and has no '/' (keys split at the first '/'), "
            f"got {instance_id!r}; use shared.metrics.instance_id(name)"
        )
    return instance_id


def check_name(name: str) -> str:
    if not isinstance(name, str) or not name or "{" in name:
        raise ValueError(f"a metric name is a non-empty string without '{{', got {name!r}")
    return name


def tag_items(tags: Mapping[str, str] | None) -> TagItems:
    """``tags`` validated and sorted by key."""
    if not tags:
        return ()
    for key, value in tags.items():
        if not isinstance(key, str) or not isinstance(value, str) or not key:
            raise ValueError(f"tags map non-empty strings to strings, got {key!r}: {value!r}")
        if _TAG_SEPARATORS & set(key + value):
            raise ValueError(
                f"tag {key}={value} contains one of , = {{ }} (they structure metric keys)"
            )
    return tuple(sorted(tags.items()))


def metric_key(instance_id: str, name: str, own_tags: Mapping[str, str] | TagItems = ()) -> str:
    """The key of metric ``name`` of ``instance_id`` with its own (not common) tags."""
    items = sorted(own_tags.items() if isinstance(own_tags, Mapping) else own_tags)
    if not items:
        return f"{instance_id}/{name}"
    return f"{instance_id}/{name}{{{','.join(f'{k}={v}' for k, v in items)}}}"


def snapshot_key(snapshot: Mapping[str, Any], common_tags: Mapping[str, str] | None = None) -> str:
    """The key of a snapshot record: its tags minus the registry's ``common_tags``."""
    common = common_tags or {}
    own = {k: v for k, v in snapshot["tags"].items() if common.get(k) != v}
    return metric_key(snapshot["instance_id"], snapshot["name"], own)
