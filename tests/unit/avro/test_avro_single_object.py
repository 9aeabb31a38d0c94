"""The single-object framing: marker, fingerprint, body."""

from __future__ import annotations

import pytest

from shared.avro import NotSingleObjectError
from shared.avro.single_object import (
    HEADER_SIZE,
    MARKER,
    frame,
    header,
    is_single_object,
    read_fingerprint,
    split,
)

FP = bytes(range(1, 9))


def test_frame_is_marker_fingerprint_body() -> None:
    message = frame(FP, b"body")
    assert message == b"\xc3\x01" + FP + b"body"
    assert MARKER == b"\xc3\x01" and HEADER_SIZE == 10
    assert split(message) == (FP, b"body")
    assert read_fingerprint(message) == FP
    assert is_single_object(message)


def test_empty_body_is_a_valid_frame() -> None:
    # e.g. a record with no fields: the header alone is a complete message
    assert split(header(FP)) == (FP, b"")


@pytest.mark.parametrize(
    "message",
    [b"", b"\xc3", b'{"record_id": "x"}', b"\x00\x01" + FP, b"\x01\xc3" + FP, b"\xc3\x00" + FP],
)
def test_bad_marker_is_not_single_object(message: bytes) -> None:
    assert not is_single_object(message)
    with pytest.raises(NotSingleObjectError):
        read_fingerprint(message)


@pytest.mark.parametrize("length", range(2, HEADER_SIZE))
def test_header_cut_short_is_not_single_object(length: int) -> None:
    message = frame(FP, b"")[:length]
    with pytest.raises(NotSingleObjectError, match="truncated"):
        read_fingerprint(message)


def test_error_shows_the_start_of_a_json_message() -> None:
    with pytest.raises(NotSingleObjectError, match=r"record_id"):
        read_fingerprint(b'{"record_id": "x", "amount": 3}')


@pytest.mark.parametrize("bad", [b"", b"1234567", b"123456789"])
def test_header_needs_an_8_byte_fingerprint(bad: bytes) -> None:
    with pytest.raises(ValueError, match="8 bytes"):
        header(bad)
