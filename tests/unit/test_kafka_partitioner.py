"""The Python murmur2 partitioner agrees with the Java Kafka client's.

The expected hashes were printed by ``org.apache.kafka.common.utils.Utils.murmur2`` from
kafka-clients 4.1.1 (the broker's version) for these keys' UTF-8 bytes; they cover every tail
length (0-3 bytes after the last whole 4-byte block) and hashes with the sign bit set.
"""

from __future__ import annotations

import pytest

from shared.kafka.partitioner import murmur2, partition_for

JAVA_MURMUR2 = {
    "": 275646681,
    "21": -973932308,
    "abc": 479470107,
    "foobar": -790332482,
    "é": 186971271,
    "cust_000042": -1757279686,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
}

#: Utils.toPositive(murmur2(key)) % 4 and % 7, as Java computed them.
JAVA_PARTITIONS = {
    "": (1, 2),
    "21": (0, 3),
    "abc": (3, 4),
    "foobar": (2, 0),
    "é": (3, 4),
    "cust_000042": (2, 1),
    "a-little-bit-long-string": (0, 1),
    "a-little-bit-longer-string": (3, 0),
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": (1, 3),
}


@pytest.mark.parametrize("key", sorted(JAVA_MURMUR2))
def test_murmur2_equals_the_java_clients_hash(key: str) -> None:
    assert murmur2(key.encode()) == JAVA_MURMUR2[key] & 0xFFFFFFFF


@pytest.mark.parametrize("key", sorted(JAVA_PARTITIONS))
def test_partition_for_equals_the_java_producers_choice(key: str) -> None:
    assert (partition_for(key.encode(), 4), partition_for(key.encode(), 7)) == JAVA_PARTITIONS[key]


def test_partition_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="partitions must be >= 1"):
        partition_for(b"key", 0)
