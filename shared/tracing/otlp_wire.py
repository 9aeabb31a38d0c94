"""OTLP trace export requests written straight to protobuf wire bytes.

Why not the SDK's encoder: ``opentelemetry-exporter-otlp-proto-common`` builds a protobuf object
per span, per attribute and per value before serialising, about 28 µs per span of Python work
(measured on this project's spans, see docs/benchmarks.md). That runs on the export thread, but
it holds the GIL, so a detector pays for it on its own processing thread. This module writes the
same ``ExportTraceServiceRequest`` (opentelemetry-proto's ``trace_service.proto``, field numbers
below) directly: a few µs per span. Resource and scope bytes are encoded once per object and
reused. The unit tests parse the output with the official protobuf classes and compare it with
the SDK encoder's message, field by field, for spans of every shape the SDK can hold.

Values follow the SDK encoder: bool, str, int (int64), float, bytes, sequences (ArrayValue) and
mappings (KeyValueList); an attribute of another type is skipped with a debug log line, as the
SDK skips it with an error line. Fields at their default (0, empty) are omitted, as protobuf
itself does. One difference, on purpose: a link's ``trace_state`` is written (OTLP has the field;
the SDK's encoder leaves it out).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext

log = logging.getLogger(__name__)

_FIXED64 = struct.Struct("<Q").pack
_DOUBLE = struct.Struct("<d").pack
_FIXED32 = struct.Struct("<I").pack

# Span.flags bits (trace.proto SpanFlags): the W3C flags byte, then "is_remote is known" and
# "the parent is remote".
#: Resources (and scopes) whose bytes are kept; a service has one or two.
_CACHED = 64

_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200


#: The one-byte varints, looked up rather than built (most lengths in a span are below 128).
_SMALL = [bytes((value,)) for value in range(0x80)]


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL[value]
    if value < 0:  # int64 on the wire: two's complement over 10 bytes
        value += 1 << 64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tag(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _delimited(field_tag: bytes, payload: bytes) -> bytes:
    size = len(payload)
    return field_tag + (_SMALL[size] if size < 0x80 else _varint(size)) + payload


# Field tags, by message (wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
_REQUEST_RESOURCE_SPANS = _tag(1, 2)
_RESOURCE_SPANS_RESOURCE, _RESOURCE_SPANS_SCOPE_SPANS = _tag(1, 2), _tag(2, 2)
_RESOURCE_SPANS_SCHEMA_URL = _tag(3, 2)
_RESOURCE_ATTRIBUTES = _tag(1, 2)
_SCOPE_SPANS_SCOPE, _SCOPE_SPANS_SPANS, _SCOPE_SPANS_SCHEMA_URL = _tag(1, 2), _tag(2, 2), _tag(3, 2)
_SCOPE_NAME, _SCOPE_VERSION, _SCOPE_ATTRIBUTES = _tag(1, 2), _tag(2, 2), _tag(3, 2)
_KV_KEY, _KV_VALUE = _tag(1, 2), _tag(2, 2)
_ANY_STRING, _ANY_BOOL, _ANY_INT = _tag(1, 2), _tag(2, 0), _tag(3, 0)
_ANY_DOUBLE, _ANY_ARRAY, _ANY_KVLIST, _ANY_BYTES = _tag(4, 1), _tag(5, 2), _tag(6, 2), _tag(7, 2)
_LIST_VALUES = _tag(1, 2)  # ArrayValue.values and KeyValueList.values
_SPAN_TRACE_ID, _SPAN_SPAN_ID, _SPAN_TRACE_STATE = _tag(1, 2), _tag(2, 2), _tag(3, 2)
_SPAN_PARENT_SPAN_ID, _SPAN_NAME, _SPAN_KIND = _tag(4, 2), _tag(5, 2), _tag(6, 0)
_SPAN_START, _SPAN_END, _SPAN_ATTRIBUTES = _tag(7, 1), _tag(8, 1), _tag(9, 2)
_SPAN_DROPPED_ATTRIBUTES, _SPAN_EVENTS, _SPAN_DROPPED_EVENTS = _tag(10, 0), _tag(11, 2), _tag(12, 0)
_SPAN_LINKS, _SPAN_DROPPED_LINKS, _SPAN_STATUS = _tag(13, 2), _tag(14, 0), _tag(15, 2)
_SPAN_FLAGS = _tag(16, 5)
_EVENT_TIME, _EVENT_NAME, _EVENT_ATTRIBUTES = _tag(1, 1), _tag(2, 2), _tag(3, 2)
_EVENT_DROPPED_ATTRIBUTES = _tag(4, 0)
_LINK_TRACE_ID, _LINK_SPAN_ID, _LINK_TRACE_STATE = _tag(1, 2), _tag(2, 2), _tag(3, 2)
_LINK_ATTRIBUTES, _LINK_DROPPED_ATTRIBUTES, _LINK_FLAGS = _tag(4, 2), _tag(5, 0), _tag(6, 5)
_STATUS_MESSAGE, _STATUS_CODE = _tag(2, 2), _tag(3, 0)


def _string(field_tag: bytes, text: str | None) -> bytes:
    return _delimited(field_tag, text.encode("utf-8")) if text else b""


def _any_value(value: Any) -> bytes:
    """AnyValue bytes (an empty AnyValue for None); TypeError for a type OTLP cannot carry."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return _ANY_BOOL + (b"\x01" if value else b"\x00")
    if isinstance(value, str):
        return _delimited(_ANY_STRING, value.encode("utf-8"))
    if isinstance(value, int):
        return _ANY_INT + _varint(value)
    if isinstance(value, float):
        return _ANY_DOUBLE + _DOUBLE(value)
    if isinstance(value, bytes):
        return _delimited(_ANY_BYTES, value)
    if isinstance(value, Sequence):
        items = b"".join(_delimited(_LIST_VALUES, _any_value(item)) for item in value)
        return _delimited(_ANY_ARRAY, items)
    if isinstance(value, Mapping):
        pairs = b"".join(
            _delimited(_LIST_VALUES, _key_value(str(key), item)) for key, item in value.items()
        )
        return _delimited(_ANY_KVLIST, pairs)
    raise TypeError(f"an OTLP attribute cannot hold {type(value).__name__}")


def _key_value(key: str, value: Any) -> bytes:
    return _string(_KV_KEY, key) + _delimited(_KV_VALUE, _any_value(value))


#: Encoded KeyValue messages of string attributes, which repeat from span to span (system,
#: topic, group, partition); emptied when it reaches the bound.
_STRING_PAIRS: dict[tuple[str, str], bytes] = {}
_STRING_PAIRS_BOUND = 4096


def _attributes(field_tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
    if not attributes:
        return b""
    parts = []
    for key, value in attributes.items():
        if type(value) is str:
            pair = _STRING_PAIRS.get((key, value))
            if pair is None:
                if len(_STRING_PAIRS) >= _STRING_PAIRS_BOUND:
                    _STRING_PAIRS.clear()
                pair = _STRING_PAIRS[(key, value)] = _key_value(key, value)
            parts.append(_delimited(field_tag, pair))
            continue
        try:
            parts.append(_delimited(field_tag, _key_value(key, value)))
        except TypeError as error:
            log.debug("span attribute %r not exported: %s", key, error)
    return b"".join(parts)


def _count(field_tag: bytes, count: int) -> bytes:
    return field_tag + _varint(count) if count else b""


def _trace_state(context: SpanContext) -> str:
    state = context.trace_state
    return ",".join(f"{key}={value}" for key, value in state.items()) if state else ""


def _flags(parent: SpanContext | None) -> int:
    if parent is not None and parent.is_remote:
        return _HAS_IS_REMOTE | _IS_REMOTE
    return _HAS_IS_REMOTE


def encode_span(span: ReadableSpan) -> bytes:
    """One ``Span`` message's bytes (without its field tag and length)."""
    context = span.context
    assert context is not None, "a finished span always has a context"
    parent = span.parent
    status = span.status
    parts = [
        _SPAN_TRACE_ID,
        b"\x10",
        context.trace_id.to_bytes(16, "big"),
        _SPAN_SPAN_ID,
        b"\x08",
        context.span_id.to_bytes(8, "big"),
        _string(_SPAN_TRACE_STATE, _trace_state(context)),
        _SPAN_PARENT_SPAN_ID + b"\x08" + parent.span_id.to_bytes(8, "big") if parent else b"",
        _string(_SPAN_NAME, span.name),
        _SPAN_KIND,
        _varint(span.kind.value + 1),  # the API's INTERNAL is 0, OTLP's SPAN_KIND_INTERNAL 1
        _SPAN_START + _FIXED64(span.start_time) if span.start_time else b"",
        _SPAN_END + _FIXED64(span.end_time) if span.end_time else b"",
        _attributes(_SPAN_ATTRIBUTES, span.attributes),
        _count(_SPAN_DROPPED_ATTRIBUTES, span.dropped_attributes),
        b"".join(_delimited(_SPAN_EVENTS, _event(event)) for event in span.events),
        _count(_SPAN_DROPPED_EVENTS, span.dropped_events),
        b"".join(_delimited(_SPAN_LINKS, _link(link)) for link in span.links),
        _count(_SPAN_DROPPED_LINKS, span.dropped_links),
        _delimited(_SPAN_STATUS, _status(status.status_code.value, status.description)),
        _SPAN_FLAGS + _FIXED32(_flags(parent)),
    ]
    return b"".join(parts)


def _status(code: int, message: str | None) -> bytes:
    return _string(_STATUS_MESSAGE, message) + (_STATUS_CODE + _varint(code) if code else b"")


def _event(event: Any) -> bytes:
    return (
        (_EVENT_TIME + _FIXED64(event.timestamp) if event.timestamp else b"")
        + _string(_EVENT_NAME, event.name)
        + _attributes(_EVENT_ATTRIBUTES, event.attributes)
        + _count(_EVENT_DROPPED_ATTRIBUTES, event.dropped_attributes)
    )


def _link(link: Any) -> bytes:
    context = link.context
    return (
        _LINK_TRACE_ID
        + b"\x10"
        + context.trace_id.to_bytes(16, "big")
        + _LINK_SPAN_ID
        + b"\x08"
        + context.span_id.to_bytes(8, "big")
        + _string(_LINK_TRACE_STATE, _trace_state(context))
        + _attributes(_LINK_ATTRIBUTES, link.attributes)
        + _count(_LINK_DROPPED_ATTRIBUTES, link.dropped_attributes)
        + _LINK_FLAGS
        + _FIXED32(_flags(context))
    )


class RequestEncoder:
    """Encodes batches of finished spans into ``ExportTraceServiceRequest`` bytes.

    Spans are grouped by resource, then by instrumentation scope, in order of first appearance
    (as the SDK's encoder does). The bytes of each resource and scope are kept, so a service's
    one resource is encoded once for its whole life, not once per batch. Grouping goes by object
    identity: ``Resource.__hash__`` serialises the attributes to JSON on every call.
    """

    def __init__(self) -> None:
        # id -> (the object, kept alive so its id stays its own; its encoded field)
        self._resources: dict[int, tuple[Resource | None, bytes]] = {}
        self._scopes: dict[int, tuple[InstrumentationScope | None, bytes]] = {}

    def encode(self, spans: Iterable[ReadableSpan]) -> bytes:
        groups: dict[int, tuple[Resource | None, dict[int, list[Any]]]] = {}
        for span in spans:
            resource, scope = span.resource, span.instrumentation_scope
            group = groups.get(id(resource))
            if group is None:
                group = groups[id(resource)] = (resource, {})
            scoped = group[1].get(id(scope))
            if scoped is None:
                scoped = group[1][id(scope)] = [scope]
            scoped.append(encode_span(span))
        out = []
        for owner, scopes in groups.values():
            body = [self._resource(owner)]
            for scope, *encoded in scopes.values():
                spans_bytes = b"".join(_delimited(_SCOPE_SPANS_SPANS, one) for one in encoded)
                scope_spans = (
                    self._scope(scope)
                    + spans_bytes
                    + _string(_SCOPE_SPANS_SCHEMA_URL, scope.schema_url if scope else None)
                )
                body.append(_delimited(_RESOURCE_SPANS_SCOPE_SPANS, scope_spans))
            if owner is not None:
                body.append(_string(_RESOURCE_SPANS_SCHEMA_URL, owner.schema_url))
            out.append(_delimited(_REQUEST_RESOURCE_SPANS, b"".join(body)))
        return b"".join(out)

    def _resource(self, resource: Resource | None) -> bytes:
        if len(self._resources) > _CACHED:
            self._resources.clear()
        cached = self._resources.get(id(resource))
        if cached is None or cached[0] is not resource:
            attributes = resource.attributes if resource is not None else None
            payload = _attributes(_RESOURCE_ATTRIBUTES, attributes)
            cached = (resource, _delimited(_RESOURCE_SPANS_RESOURCE, payload))
            self._resources[id(resource)] = cached
        return cached[1]

    def _scope(self, scope: InstrumentationScope | None) -> bytes:
        if len(self._scopes) > _CACHED:
            self._scopes.clear()
        cached = self._scopes.get(id(scope))
        if cached is None or cached[0] is not scope:
            payload = b""
            if scope is not None:
                payload = (
                    _string(_SCOPE_NAME, scope.name)
                    + _string(_SCOPE_VERSION, scope.version)
                    + _attributes(_SCOPE_ATTRIBUTES, scope.attributes)
                )
            cached = (scope, _delimited(_SCOPE_SPANS_SCOPE, payload))
            self._scopes[id(scope)] = cached
        return cached[1]
