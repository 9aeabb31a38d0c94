"""The changelog's keys and values: how a state slot is written to a detector's changelog topic
and read back on restore.

One slot per key: ``["store","key"]`` for a key-value entry, ``["store","key",bucket]`` for a
window bucket, the value a counter's digits or JSON. Its own module because everything that
writes slots (the declared stores in :mod:`shared.detector.state`, the replay guard in
:mod:`shared.detector.replays`) must write the one format that restore reads.
"""

from __future__ import annotations

import functools
import json
from typing import Any


def encode_key(parts: tuple[Any, ...]) -> bytes:
    """The changelog key of a slot: a JSON array (store, key[, bucket]).

    A window slot of plain text (ids, names) is written without JSON: one per state change,
    and the JSON encoder cost a stateful detector ~1 µs of its ~25 a record."""
    if len(parts) == 3:
        store, key, bucket = parts
        prefix = _plain_prefix(store)
        if prefix is not None and key.__class__ is str and _is_plain(key):
            return b'%s%s",%d]' % (prefix, key.encode(), bucket)
    return json.dumps(parts, separators=(",", ":")).encode()


def _is_plain(text: str) -> bool:
    """Printable ASCII without quote and backslash: text that JSON writes as it is."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


@functools.lru_cache(maxsize=256)
def _plain_prefix(store: Any) -> bytes | None:
    """``["store","`` for a plain store name (there are a few per detector), else None."""
    if store.__class__ is not str or not _is_plain(store):
        return None
    return b'["%s","' % store.encode()


def decode_key(key: bytes) -> list[Any]:
    """The parts of a changelog key: the inverse of :func:`encode_key`.

    A restore decodes every update of the changelog, a million or more after a busy hour, so
    the window slot that :func:`encode_key` writes without JSON is read back without JSON too
    (three times faster); anything else, or anything escaped, goes through ``json.loads``.
    """
    if key[:2] == b'["' and key[-1:] == b"]" and key.count(b'"') == 4 and b"\\" not in key:
        store, sep, rest = key[2:-1].partition(b'","')
        name, sep2, bucket = rest.rpartition(b'",')
        if sep and sep2 and (bucket[1:] if bucket[:1] == b"-" else bucket).isdigit():
            return [store.decode(), name.decode(), int(bucket)]
    parts: list[Any] = json.loads(key)
    return parts


def decode_value(value: bytes) -> Any:
    """A changelog value: a counter's digits directly, anything else as JSON."""
    if value.isdigit():
        return int(value)
    return json.loads(value)
