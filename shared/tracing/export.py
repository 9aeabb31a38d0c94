"""Span export that never holds up a service: a bounded queue, one export thread, counters.

:class:`BoundedSpanProcessor` puts each finished, sampled span on the OpenTelemetry SDK's
``BatchSpanProcessor`` queue (a deque append: no lock, no I/O on the caller's thread) and keeps
the queue bounded itself: when ``queue_size`` spans are already waiting, the new span is dropped
and counted. The SDK's processor exports from its own daemon thread through a
:class:`CountingSpanExporter`, which counts what the backend accepted and what it refused.

Where time goes when the backend is down or slow (OTLP/HTTP exporter of opentelemetry 1.45):
the ``timeout`` given to the exporter bounds one export call **including its retries**. A refused
connection is retried once at once, then with exponential back-off (1 s, 2 s, 4 s ... with 20 %
jitter, at most 6 attempts) but only while the back-off still fits before the deadline; a 429,
502, 503 or 504 likewise; other errors fail at once. All of that, sleeps included, happens on the
export thread. Meanwhile new spans queue up to the bound and are then dropped, so the caller's
cost stays one counter check and one append per span.

Shutdown and flush wait at most the timeout they are given (in SDK 1.45 ``force_flush`` ignores
its timeout and ``shutdown`` waits up to 30 s): they run in a helper thread that is abandoned
when the time is up; after a shutdown that timed out the exporter is shut down, which ends any
retry wait.
Spans still queued at that point are counted as dropped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from shared.tracing.config import TracingConfig
from shared.tracing.stats import TracingStats

log = logging.getLogger(__name__)


class CountingSpanExporter(SpanExporter):
    """Wraps an exporter; counts spans exported and failed, and failed batches.

    The counters are written by the export thread only. An exception from the wrapped exporter
    counts as a failure and does not escape. The first failure after a success logs one warning
    and the next success one info line, so a backend that is down does not flood the logs.
    """

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        #: Spans handed to :meth:`export` (taken off the queue).
        self.spans_handed = 0
        self.spans_exported = 0
        self.spans_failed = 0
        self.failed_batches = 0
        self._failing = False
        self._shut_down = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        count = len(spans)
        self.spans_handed += count
        result = SpanExportResult.FAILURE
        if not self._shut_down:
            try:
                result = self.inner.export(spans)
            except Exception as error:  # an exporter bug must not reach the export thread
                log.debug("span exporter raised", exc_info=error)
        if result is SpanExportResult.SUCCESS:
            self.spans_exported += count
            if self._failing:
                self._failing = False
                log.info("trace export works again")
        else:
            self.spans_failed += count
            self.failed_batches += 1
            if not self._failing:
                self._failing = True
                log.warning(
                    "trace export failed; spans are dropped and counted until it works again"
                )
        return result

    def shutdown(self) -> None:
        """Shut the wrapped exporter down once (ends its retry waits); later exports fail."""
        if not self._shut_down:
            self._shut_down = True
            self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class BoundedSpanProcessor(SpanProcessor):
    """Queues sampled finished spans for a batch export thread; never blocks the caller."""

    def __init__(self, exporter: CountingSpanExporter, config: TracingConfig) -> None:
        self.exporter = exporter
        self._limit = config.queue_size
        self._batch = BatchSpanProcessor(
            exporter,
            max_queue_size=config.queue_size,
            schedule_delay_millis=config.schedule_delay_s * 1000.0,
            max_export_batch_size=min(config.max_export_batch_size, config.queue_size),
            export_timeout_millis=config.export_timeout_s * 1000.0,
        )
        #: Spans put on the queue (written by the threads that end spans).
        self.spans_accepted = 0
        #: Spans refused because the queue was full or tracing had shut down.
        self.spans_refused = 0
        self._closed = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        # Spans handed to the exporter have left the queue, so this bounds the SDK's deque too.
        if self._closed or self.spans_accepted - self.exporter.spans_handed >= self._limit:
            self.spans_refused += 1
            return
        self.spans_accepted += 1
        self._batch.on_end(span)

    def stats(self) -> TracingStats:
        exporter = self.exporter
        queued = max(self.spans_accepted - exporter.spans_handed, 0)
        lost = queued if self._closed else 0
        return TracingStats(
            spans_exported=exporter.spans_exported,
            spans_dropped=self.spans_refused + exporter.spans_failed + lost,
            export_failures=exporter.failed_batches,
            spans_queued=queued - lost,
        )

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export what is queued; wait at most ``timeout_millis``. True when all was sent."""
        if self._closed:
            return False
        return _within(self._batch.force_flush, timeout_millis / 1000.0)

    def close(self, timeout_s: float) -> bool:
        """Export what is queued and stop, waiting at most ``timeout_s``; True if that was enough.

        New spans are refused from now on; whatever is still queued when the time is up is
        counted as dropped.
        """
        if self._closed:
            return True
        self._closed = True
        done = _within(self._batch.shutdown, timeout_s)
        if not done:
            self.exporter.shutdown()  # ends the export thread's retry wait, if it is in one
        return done

    def shutdown(self) -> None:
        self.close(timeout_s=5.0)


def _within(action: Callable[[], object], timeout_s: float) -> bool:
    """Run ``action()`` in a daemon thread; True if it finished within ``timeout_s``."""
    thread = threading.Thread(target=action, name="mesh-tracing-flush", daemon=True)
    thread.start()
    thread.join(max(timeout_s, 0.0))
    return not thread.is_alive()
