"""Decoding ``__consumer_offsets`` records built by hand from Kafka 4.1's message definitions."""

import struct

import pytest

from testkit.group_generations import CorruptGroupRecordError, decode_group_metadata


def int16(n: int) -> bytes:
    return struct.pack(">h", n)


def int32(n: int) -> bytes:
    return struct.pack(">i", n)


def int64(n: int) -> bytes:
    return struct.pack(">q", n)


def string(text: str | None) -> bytes:
    """Non-flexible STRING / NULLABLE_STRING: int16 length (-1 for null), then UTF-8."""
    if text is None:
        return int16(-1)
    data = text.encode()
    return int16(len(data)) + data


def compact_string(text: str | None) -> bytes:
    """Flexible COMPACT_STRING: unsigned varint of length + 1 (0 for null), then UTF-8."""
    if text is None:
        return b"\x00"
    data = text.encode()
    return unsigned_varint(len(data) + 1) + data


def unsigned_varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def classic_key(group: str) -> bytes:
    """GroupMetadataKey: record type 2, then the group id."""
    return int16(2) + string(group)


def classic_value_v3(generation: int, protocol_type: str = "consumer") -> bytes:
    """GroupMetadataValue version 3 (what Kafka 4.1.1 writes), with one member."""
    member = (
        string("member-1")
        + string(None)  # groupInstanceId
        + string("client-1")
        + string("/127.0.0.1")
        + int32(300_000)  # rebalanceTimeout
        + int32(45_000)  # sessionTimeout
        + int32(3)
        + b"sub"
        + int32(3)
        + b"asg"
    )
    return (
        int16(3)
        + string(protocol_type)
        + int32(generation)
        + string("cooperative-sticky")
        + string("member-1")
        + int64(1_700_000_000_000)  # currentStateTimestamp
        + int32(1)
        + member
    )


def classic_value_v4(generation: int, protocol_type: str = "consumer") -> bytes:
    """GroupMetadataValue version 4, the first flexible one: compact strings, no members."""
    return (
        int16(4)
        + compact_string(protocol_type)
        + int32(generation)
        + compact_string("range")
        + compact_string(None)
        + int64(-1)
        + unsigned_varint(0 + 1)  # compact array of no members
        + b"\x00"  # no tagged fields
    )


def test_a_classic_group_record_gives_its_generation():
    assert decode_group_metadata(classic_key("fraud-a"), classic_value_v3(7)) == ("fraud-a", 7)


def test_version_0_is_read_the_same_way():
    value = int16(0) + string("consumer") + int32(2) + string("range") + string(None) + int32(0)
    assert decode_group_metadata(classic_key("g"), value) == ("g", 2)


def test_the_flexible_version_uses_compact_strings():
    assert decode_group_metadata(classic_key("g"), classic_value_v4(12)) == ("g", 12)


def test_a_long_protocol_type_needs_a_multi_byte_varint():
    protocol_type = "p" * 200
    assert decode_group_metadata(classic_key("g"), classic_value_v4(5, protocol_type)) == ("g", 5)


def test_an_empty_group_record_has_an_empty_protocol_type():
    assert decode_group_metadata(classic_key("g"), classic_value_v3(0, "")) == ("g", 0)


def test_a_tombstone_means_the_group_was_deleted():
    assert decode_group_metadata(classic_key("gone"), None) == ("gone", None)


def test_a_consumer_protocol_group_gives_its_epoch():
    key = int16(3) + string("kip848")
    value = int16(0) + int32(9) + unsigned_varint(1) + unsigned_varint(0) + b"\x08" + int64(42)
    assert decode_group_metadata(key, value) == ("kip848", 9)


@pytest.mark.parametrize("record_type", [0, 1])
def test_offset_commits_are_not_group_metadata(record_type):
    key = int16(record_type) + string("g") + string("orders") + int32(0)
    assert decode_group_metadata(key, int16(3) + int64(10)) is None


@pytest.mark.parametrize("record_type", [4, 5, 6, 7, 8, 9, 10, 11, 17])
def test_other_record_types_are_skipped(record_type):
    assert decode_group_metadata(int16(record_type) + string("g"), b"\x00\x00") is None


def test_a_truncated_value_is_an_error_not_a_wrong_generation():
    value = classic_value_v3(7)[:12]
    with pytest.raises(CorruptGroupRecordError, match="record ends"):
        decode_group_metadata(classic_key("g"), value)
