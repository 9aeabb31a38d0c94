"""The lineage headers: where a record came from, carried hop by hop next to its trace context.

Ingest puts both on every valid record it routes (a dead letter names its source in its own
fields instead); the detector runtime copies them onto each alert the record raises, and the
notifier keeps them with the delivery. So any hop
can tell, without a trace backend, which raw record an output stems from and how long ago the
mesh first saw it (the end-to-end latency the demo and the benchmarks report).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

#: ``<raw topic>:<partition>:<offset>`` of the raw record.
SOURCE_HEADER = "mesh.source"
#: The raw record's Kafka timestamp (epoch ms, decimal text).
SOURCE_TIMESTAMP_HEADER = "mesh.source.timestamp"

LINEAGE_HEADERS = (SOURCE_HEADER, SOURCE_TIMESTAMP_HEADER)
#: The same timestamp as an HTTP header on the notifier's webhook requests, so a receiver (the
#: demo's among them) can tell how long the mesh took from the raw record to it.
SOURCE_TIMESTAMP_HTTP_HEADER = "Mesh-Source-Timestamp"


def lineage_headers(headers: Sequence[tuple[str, bytes | None]] | None) -> list[tuple[str, bytes]]:
    """The lineage headers among ``headers``, unchanged (none if the record has none)."""
    return [(k, v) for k, v in headers or () if k in LINEAGE_HEADERS and v is not None]


def source_timestamp_ms(headers: Sequence[tuple[str, bytes | None]] | None) -> int | None:
    """The raw record's Kafka timestamp, if ``headers`` carry it."""
    for key, value in headers or ():
        if key == SOURCE_TIMESTAMP_HEADER and value:
            try:
                return int(value)
            except ValueError:
                return None
    return None


class Source(NamedTuple):
    """Where a routed record came from: its raw partition (``topic:partition``, as the header's
    bytes: the replay guard keys on it per record, undecoded), its offset there, and the raw
    record's timestamp (-1 when not carried)."""

    partition: bytes
    offset: int
    timestamp: int


def source_of(headers: Sequence[tuple[str, bytes | None]] | None) -> Source | None:
    """The raw source ``headers`` name, or None (a record not routed by ingest: a test's feed,
    a backfill written straight to a records topic, a header that does not parse)."""
    where = stamp = None
    for key, value in headers or ():
        if key == SOURCE_HEADER:
            where = value
        elif key == SOURCE_TIMESTAMP_HEADER:
            stamp = value
    if not where:
        return None
    partition, _, offset = where.rpartition(b":")
    try:
        return Source(partition, int(offset), int(stamp) if stamp else -1)
    except ValueError:
        return None
