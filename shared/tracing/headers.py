"""W3C trace context in Kafka headers (``traceparent``, ``tracestate``).

confluent-kafka gives a consumed message's headers as a list of ``(str, bytes)`` tuples (a value
may be None) or None when there are none; ``produce`` takes the same list. A getter/setter pair
lets OpenTelemetry's ``TraceContextTextMapPropagator`` read and write such lists.

* :func:`extract` - headers -> Context. A malformed ``traceparent`` is ignored (the record starts
  a new trace) with one debug log line.
* :func:`inject` - Context (or the current one) -> headers to produce.
* :func:`is_sampled` - does this record's ``traceparent`` say "sampled"? Reads the header bytes
  only, so a hot path can skip all span work for unsampled records before creating anything.
* :func:`trace_headers` - the incoming trace headers as they are, to pass on unchanged when no
  span is made.

Header names are matched case-insensitively (W3C names are lower case; some producers capitalise).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter, Setter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = logging.getLogger(__name__)

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

#: Headers as confluent-kafka's ``Message.headers()`` returns them (a dict is accepted too).
Headers: TypeAlias = (
    Sequence[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None] | None
)
#: Headers as ``Producer.produce(headers=...)`` takes them.
ProducedHeaders: TypeAlias = list[tuple[str, bytes]]

# The propagator's own rule (W3C Trace Context level 1): version 00 has exactly four fields,
# a later version may append more, ff is invalid, all-zero ids are invalid.
_TRACEPARENT = re.compile(
    rb"[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:(-.*)|[ \t]*)", re.S
)
_ZERO_TRACE = b"0" * 32
_ZERO_SPAN = b"0" * 16
_EVEN_HEX_DIGITS = frozenset(b"02468ace")
_PROPAGATOR = TraceContextTextMapPropagator()


def _items(headers: Headers) -> Sequence[tuple[str, bytes | str | None]]:
    if not headers:
        return ()
    if isinstance(headers, Mapping):
        return list(headers.items())
    return headers


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class KafkaHeadersGetter(Getter[Headers]):
    """Reads header values as text for a TextMapPropagator."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        values = [
            _text(v) for k, v in _items(carrier) if v is not None and k.lower() == key.lower()
        ]
        return values or None

    def keys(self, carrier: Headers) -> list[str]:
        return [k for k, _ in _items(carrier)]


class KafkaHeadersSetter(Setter[ProducedHeaders]):
    """Writes header values as UTF-8 bytes, replacing any header of the same name."""

    def set(self, carrier: ProducedHeaders, key: str, value: str) -> None:
        carrier[:] = [(k, v) for k, v in carrier if k.lower() != key.lower()]
        carrier.append((key, value.encode("utf-8")))


GETTER = KafkaHeadersGetter()
SETTER = KafkaHeadersSetter()


def extract(headers: Headers) -> Context:
    """The trace context the record carries, or an empty Context (a new trace starts)."""
    context = _PROPAGATOR.extract(headers, getter=GETTER)
    if not trace.get_current_span(context).get_span_context().is_valid:
        sent = GETTER.get(headers, TRACEPARENT)
        if sent:
            log.debug("ignoring malformed traceparent %r: a new trace starts", sent[0][:80])
    return context


def inject(
    context: Context | None = None, headers: ProducedHeaders | None = None
) -> ProducedHeaders:
    """Headers carrying ``context``'s span (default: the current one), added to a copy of
    ``headers``; without a valid span the copy is returned unchanged."""
    carrier = list(headers) if headers else []
    _PROPAGATOR.inject(carrier, context, SETTER)
    return carrier


def is_sampled(carrier: Headers | Context) -> bool:
    """True when the record's valid ``traceparent`` (or the Context's span) is sampled.

    False when it is absent, malformed or not sampled. On headers this parses nothing but the
    one header, creates no Context and no span: the test for a hot path.
    """
    if isinstance(carrier, Context):
        return trace.get_current_span(carrier).get_span_context().trace_flags.sampled
    for key, value in _items(carrier):
        if value is not None and key.lower() == TRACEPARENT:
            raw = value.encode("latin-1", "replace") if isinstance(value, str) else value
            return _sampled_flag(raw)
    return False


def _sampled_flag(raw: bytes) -> bool:
    # The sampled bit is the low bit of the flags' last hex digit: a usual (55-byte) unsampled
    # traceparent is answered without parsing; only a sampled one must prove to be valid.
    if len(raw) == 55 and raw[54] in _EVEN_HEX_DIGITS:
        return False
    match = _TRACEPARENT.fullmatch(raw)
    if match is None or len(raw) > 512:
        return False
    version, trace_id, span_id, flags, rest = match.groups()
    if version == b"ff" or (version == b"00" and rest) or trace_id == _ZERO_TRACE:
        return False
    return span_id != _ZERO_SPAN and bool(int(flags, 16) & 0x01)


def trace_headers(headers: Headers) -> ProducedHeaders:
    """The ``traceparent`` and ``tracestate`` headers among ``headers``, as bytes, unchanged."""
    return [
        (k, v.encode("utf-8") if isinstance(v, str) else v)
        for k, v in _items(headers)
        if v is not None and k.lower() in (TRACEPARENT, TRACESTATE)
    ]
