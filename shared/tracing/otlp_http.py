"""The SDK's OTLP/HTTP span exporter with the request encoded by :mod:`shared.tracing.otlp_wire`.

Everything but the encoding stays the SDK's: endpoint, ``OTEL_EXPORTER_OTLP_*`` headers,
compression and TLS files, the HTTP session, timeouts and the retry policy described in
:mod:`shared.tracing.export`. Only :meth:`export` is replaced, because the SDK's encoder costs
~28 µs of GIL-holding Python per span and this one ~9 µs (docs/benchmarks.md, "tracing").

It reaches into the SDK exporter's ``_client`` (the HTTP client that sends one request with
retries) and ``_shutdown``: those are private, so the exporter version is pinned
(requirements.lock) and ``tests/integration/test_tracing_export.py`` sends through this class to
a real HTTP receiver and decodes what arrived, which fails loudly if an upgrade moves them.
The SDK's own exporter metrics (off unless ``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``) are not
kept; :class:`shared.tracing.export.CountingSpanExporter` counts instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from shared.tracing.otlp_wire import RequestEncoder

log = logging.getLogger(__name__)


class WireOTLPSpanExporter(OTLPSpanExporter):
    """OTLP/HTTP protobuf export whose request bytes come from :class:`RequestEncoder`."""

    def __init__(self, endpoint: str, timeout: float) -> None:
        super().__init__(endpoint=endpoint, timeout=timeout)
        self._encoder = RequestEncoder()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            payload = self._encoder.encode(spans)
        except Exception as error:  # a span the encoder cannot write must not end the thread
            log.error("could not encode %d spans for export: %s", len(spans), error)
            return SpanExportResult.FAILURE
        result = self._client.export(payload)
        return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE
