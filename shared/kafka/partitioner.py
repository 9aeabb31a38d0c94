"""Which partition a keyed record goes to: Java Kafka's murmur2 partitioner, in Python.

Every hop of the mesh must put a key in the same partition number: Spark's Kafka sink (ingest)
partitions with the Java client's murmur2, so the mesh's own producers are configured with
librdkafka's ``murmur2_random`` (the same hash), and tools that simulate partitioning (the
detector harness) use ``partition_for`` below. Then partition p of a raw topic feeds exactly
partition p of its records topic, in order, and a detector's per-partition stream time does not
depend on how Spark interleaved the raw partitions.
"""

from __future__ import annotations

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(key: bytes) -> int:
    """Kafka's ``Utils.murmur2``: MurmurHash2 (32-bit), as an unsigned 32-bit value."""
    length = len(key)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(key[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = key[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Java producers, Spark and ``murmur2_random`` choose for ``key``."""
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions
