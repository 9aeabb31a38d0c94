"""Tracing across services: one trace per record, from ingest to alert (OpenTelemetry).

Modules, one concern each:
  config          TracingConfig: OTLP endpoint, sample ratio, export bounds, from the environment
  setup           setup_tracing / tracer_for: the SDK when an endpoint is set, else the no-op
                  tracer; Tracing handle with stats, submit, flush, shutdown
  stats           TracingStats: spans exported, dropped, queued; failed export calls
  export          bounded non-blocking batch export that keeps those counts
  headers         W3C trace context in Kafka headers: extract, inject, is_sampled,
                  sampled_parent
  messaging       "<topic> process" / "<topic> publish" spans per the messaging conventions
  record_spans    the same spans built directly, for hot loops (the detector runtime)
  spans_from_ids  finished spans with given ids (ingest computes its ids in Spark)
  otlp_wire       OTLP export requests written straight to protobuf bytes
  otlp_http       the SDK's OTLP/HTTP exporter using that encoder
  jaeger_api      traces read back from Jaeger's HTTP API (tests, the demo's scorer)

Typical use in a service::

    tracing = setup_tracing("detector.velocity", instance_id("detector-velocity-r1-0"))
    ...
    if is_sampled(message.headers()):
        span = process_span(tracing.tracer, topic, partition, offset, group,
                            extract(message.headers()))
        ...
    registry.gauge("tracing.spans.dropped", lambda: tracing.stats().spans_dropped)
    ...
    tracing.shutdown(timeout_s=5)

The SDK and the OTLP exporter are imported only when tracing is on (the no-op path imports the
OpenTelemetry API alone); ``export``, ``record_spans``, ``spans_from_ids``, ``otlp_wire`` and
``otlp_http`` import the SDK, so they are not re-exported here.
"""

from shared.tracing.config import TracingConfig
from shared.tracing.headers import extract, inject, is_sampled, sampled_parent, trace_headers
from shared.tracing.messaging import process_span, publish_headers, publish_span, record_failure
from shared.tracing.setup import Tracing, setup_tracing, shutdown, tracer_for
from shared.tracing.stats import TracingStats

__all__ = [
    "Tracing",
    "TracingConfig",
    "TracingStats",
    "extract",
    "inject",
    "is_sampled",
    "process_span",
    "publish_headers",
    "publish_span",
    "record_failure",
    "sampled_parent",
    "setup_tracing",
    "shutdown",
    "trace_headers",
    "tracer_for",
]
