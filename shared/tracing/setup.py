"""One service instance's tracer: OpenTelemetry SDK when an endpoint is configured, else no-op.

With no OTLP endpoint (see :mod:`shared.tracing.config`) :func:`setup_tracing` returns a handle
around the OpenTelemetry API's ``NoOpTracer``: the SDK is not even imported, nothing runs in the
background, and a span costs one call returning the parent's non-recording span (so trace context
still flows through: injecting it writes the incoming ``traceparent`` unchanged).

With an endpoint it builds a private SDK ``TracerProvider``, never the global one (so a library
or a test cannot change it behind the service's back), with

* the resource ``service.name``, ``service.instance.id`` (the id the metrics use, from
  :func:`shared.metrics.instance_id`) and ``service.version``;
* the sampler ``ParentBased(TraceIdRatioBased(ratio))``: a record whose context is sampled is
  always traced, an unsampled one never, and a new trace with probability ``ratio``;
* a :class:`~shared.tracing.export.BoundedSpanProcessor` around the OTLP/HTTP exporter (see that
  module for why a down or slow backend never blocks the service).

The provider is not shut down by the SDK's own exit hook (which may wait 30 s on a dead
backend); an exit hook here gives every live handle :data:`EXIT_TIMEOUT_S` in all.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.semconv.attributes.service_attributes import (
    SERVICE_INSTANCE_ID,
    SERVICE_NAME,
    SERVICE_VERSION,
)

from shared.settings import Settings
from shared.tracing.config import TracingConfig
from shared.tracing.stats import TracingStats

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from shared.tracing.export import BoundedSpanProcessor

#: Instrumentation scope of every span the mesh creates.
SCOPE_NAME = "detector-mesh"
#: Seconds the exit hook waits, in all, for queued spans to be exported.
EXIT_TIMEOUT_S = 5.0
#: The OTLP/HTTP exporter logs every failed batch and retry there; see :class:`_OncePerMinute`.
_OTLP_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"

_lock = threading.Lock()
_live: list[Tracing] = []
_exit_hook_registered = False


class Tracing:
    """A service instance's tracing: ``tracer``, :meth:`stats`, :meth:`submit`, :meth:`shutdown`.

    ``enabled`` is False when nothing is exported; the tracer is then the API's no-op tracer.
    """

    def __init__(
        self,
        tracer: trace.Tracer,
        config: TracingConfig,
        provider: TracerProvider | None = None,
        processor: BoundedSpanProcessor | None = None,
        scope: InstrumentationScope | None = None,
    ) -> None:
        self.tracer = tracer
        self.config = config
        self.provider = provider
        #: The instrumentation scope of the tracer's spans, for spans built directly.
        self.scope = scope
        self._processor = processor

    @property
    def enabled(self) -> bool:
        return self._processor is not None

    @property
    def resource(self) -> Resource | None:
        """service.name, service.instance.id, service.version; None when tracing is off."""
        return None if self.provider is None else self.provider.resource

    def stats(self) -> TracingStats:
        """Spans exported, dropped, queued and failed export calls so far (all 0 when off)."""
        return TracingStats() if self._processor is None else self._processor.stats()

    def submit(self, spans: Iterable[ReadableSpan]) -> int:
        """Queue finished spans (e.g. from :func:`~shared.tracing.spans_from_ids.span_from_ids`)
        for export like the tracer's own; never blocks. Returns how many were accepted (0 when
        tracing is off, fewer when the queue is full: those are counted as dropped)."""
        processor = self._processor
        if processor is None:
            return 0
        before = processor.spans_accepted
        for span in spans:
            processor.on_end(span)
        return processor.spans_accepted - before

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Export what is queued, waiting at most ``timeout_s``; True when it all went out."""
        if self._processor is None:
            return True
        return self._processor.force_flush(int(timeout_s * 1000))

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Export what is queued and stop, waiting at most ``timeout_s``; True if that sufficed.

        Spans still queued after that are counted as dropped. Safe to call more than once.
        """
        with _lock:
            if self in _live:
                _live.remove(self)
        if self._processor is None or self.provider is None:
            return True
        done = self._processor.close(timeout_s)
        self.provider.shutdown()  # the processor is closed already: this returns at once
        return done


def setup_tracing(
    service_name: str,
    instance_id: str,
    version: str | None = None,
    settings: Settings | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config: TracingConfig | None = None,
    exporter: SpanExporter | None = None,
) -> Tracing:
    """Tracing for one service instance, configured from the environment (or ``config``).

    ``version`` defaults to the installed detector-mesh version. ``exporter`` replaces the OTLP
    exporter (tests use the SDK's ``InMemorySpanExporter``); it turns tracing on even without
    an endpoint.
    """
    config = TracingConfig.from_env(settings, env) if config is None else config
    if exporter is None and not config.enabled:
        return Tracing(trace.NoOpTracer(), config)

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from shared.tracing.export import BoundedSpanProcessor, CountingSpanExporter

    version = package_version() if version is None else version
    if exporter is None:
        exporter = _otlp_exporter(config)
    resource = Resource.create(
        {SERVICE_NAME: service_name, SERVICE_INSTANCE_ID: instance_id, SERVICE_VERSION: version}
    )
    processor = BoundedSpanProcessor(CountingSpanExporter(exporter), config)
    provider = TracerProvider(
        sampler=ParentBased(TraceIdRatioBased(config.sample_ratio)),
        resource=resource,
        shutdown_on_exit=False,
    )
    provider.add_span_processor(processor)
    scope = InstrumentationScope(SCOPE_NAME, version)
    tracer = provider.get_tracer(SCOPE_NAME, version)
    handle = Tracing(tracer, config, provider, processor, scope)
    _register(handle)
    return handle


def tracer_for(
    service_name: str,
    instance_id: str,
    version: str | None = None,
    settings: Settings | None = None,
) -> trace.Tracer:
    """The tracer of :func:`setup_tracing`, for callers that need nothing else.

    :func:`shutdown` (also run at exit) flushes it; with no endpoint this is the API's no-op
    tracer and nothing is created.
    """
    return setup_tracing(service_name, instance_id, version, settings).tracer


def shutdown(timeout_s: float = EXIT_TIMEOUT_S) -> bool:
    """Flush and stop every tracer this process set up, in ``timeout_s`` at most in all."""
    deadline = time.monotonic() + timeout_s
    with _lock:
        handles = list(_live)
    done = True
    for handle in handles:
        done = handle.shutdown(max(deadline - time.monotonic(), 0.0)) and done
    return done


def package_version() -> str:
    """The installed detector-mesh version, or ``0+unknown`` when it is not installed."""
    try:
        return metadata.version("detector-mesh")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _otlp_exporter(config: TracingConfig) -> SpanExporter:
    """The OTLP/HTTP protobuf exporter posting to ``config.traces_url`` (the SDK's, with the
    request encoded by :mod:`shared.tracing.otlp_wire`).

    Headers, compression and TLS files still come from the standard ``OTEL_EXPORTER_OTLP_*``
    variables, which the exporter reads itself.
    """
    from shared.tracing.otlp_http import WireOTLPSpanExporter

    otlp_logger = logging.getLogger(_OTLP_LOGGER)
    if not any(isinstance(f, _OncePerMinute) for f in otlp_logger.filters):
        otlp_logger.addFilter(_OncePerMinute())
    return WireOTLPSpanExporter(endpoint=config.traces_url, timeout=config.export_timeout_s)


class _OncePerMinute(logging.Filter):
    """Lets each message template through once a minute: with the backend down, the exporter
    would otherwise log an error per batch and a warning per retry."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[tuple[int, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.levelno, str(record.msg))
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < 60.0:
            return False
        self._last[key] = now
        return True


def _register(handle: Tracing) -> None:
    global _exit_hook_registered
    with _lock:
        _live.append(handle)
        if not _exit_hook_registered:
            atexit.register(shutdown, EXIT_TIMEOUT_S)
            _exit_hook_registered = True
