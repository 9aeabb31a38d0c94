"""Where a partition the group has never committed starts: the manifest's ``start``.

``earliest`` and ``latest`` are librdkafka's ``auto.offset.reset``, which already applies only to
partitions without a committed offset. A time (a backfill) has no such setting: when partitions
are assigned, the runtime asks which of them have no commit, looks up the first offset at or after
the time (``offsets_for_times``; past the last record, the end of the partition) and assigns them
there itself. Partitions with a commit continue from it, so a restarted instance never goes back
to the manifest's time.

Assigning inside ``on_assign`` replaces confluent-kafka's own assign after the callback, so it
must cover every partition of the callback, in the group's protocol: ``incremental_assign`` of
the new partitions (cooperative-sticky), ``assign`` of the whole assignment (range, eager).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaException, TopicPartition

from shared.detector import Manifest
from shared.detector.manifest import START_POSITIONS
from shared.kafka.inspect import watermarks

log = logging.getLogger(__name__)


def auto_offset_reset(manifest: Manifest) -> str:
    """librdkafka's reset policy: the manifest's position, or ``earliest`` under a time (what is
    left when retention removed records past a committed offset)."""
    return manifest.start if manifest.start in START_POSITIONS else "earliest"


def is_cooperative(consumer_settings: Mapping[str, Any]) -> bool:
    """Whether assignments are incremental; confluent-kafka does not expose the protocol, so it
    is read from the settings (librdkafka is cooperative only when every assignor is)."""
    if str(consumer_settings.get("group.protocol", "classic")).lower() == "consumer":
        return True
    strategy = str(consumer_settings.get("partition.assignment.strategy", ""))
    names = [s.strip() for s in strategy.split(",") if s.strip()]
    return bool(names) and all(name == "cooperative-sticky" for name in names)


def offsets_at_time(
    consumer: Any, partitions: list[Any], start_ms: int, timeout_s: float = 30.0
) -> dict[tuple[str, int], int]:
    """Where each of ``partitions`` starts at ``start_ms``: its first record at or after it, or
    past its last record if none is; by (topic, partition)."""
    if not partitions:
        return {}
    # The end first: a record produced after this lookup has an offset >= it, so "past the
    # last record" never skips a record that arrives meanwhile.
    ends = {(tp.topic, tp.partition): watermarks(consumer, tp, timeout_s)[1] for tp in partitions}
    lookups = [TopicPartition(tp.topic, tp.partition, start_ms) for tp in partitions]
    chosen: dict[tuple[str, int], int] = {}
    for tp in consumer.offsets_for_times(lookups, timeout=timeout_s):
        if tp.error is not None:
            raise KafkaException(tp.error)
        key = (tp.topic, tp.partition)
        chosen[key] = tp.offset if tp.offset >= 0 else ends[key]
    return chosen


def assign_from_time(
    consumer: Any,
    partitions: list[Any],
    start_ms: int,
    cooperative: bool,
    timeout_s: float = 30.0,
) -> dict[tuple[str, int], int]:
    """Assign the callback's ``partitions``; those never committed at ``start_ms``. Returns the
    offsets chosen for them, by (topic, partition)."""

    fresh = []
    if partitions:
        keys = [TopicPartition(p.topic, p.partition) for p in partitions]
        for tp in consumer.committed(keys, timeout=timeout_s):
            if tp.error is not None:
                raise KafkaException(tp.error)
            if tp.offset < 0:
                fresh.append(tp)
    chosen = offsets_at_time(consumer, fresh, start_ms, timeout_s)
    if chosen:
        log.info(
            "never committed, starting at the manifest's time: %s",
            ", ".join(f"{t}[{p}]@{o}" for (t, p), o in sorted(chosen.items())),
        )
    assignment = [
        TopicPartition(p.topic, p.partition, chosen.get((p.topic, p.partition), OFFSET_INVALID))
        for p in partitions
    ]
    if cooperative:
        consumer.incremental_assign(assignment)
    else:
        consumer.assign(assignment)
    return chosen
