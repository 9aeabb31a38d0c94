"""A sender's own trace context on planted records (``mesh produce --trace-planted``).

A customer's system that traces its suspicious payments sends them with a sampled W3C
``traceparent``; ingest continues that trace whatever the mesh's sample ratio, and every hop after
it follows. The load generator does the same for its planted fraud, so every planted alert can be
found in the trace backend even at 1 % sampling (at 1 % only one alert in a hundred would be). The
ids are derived from the seed and the record's position, so the same run gives the same traces,
and the ground truth names each planted record's trace id.
"""

from __future__ import annotations

import hashlib

from tools.loadgen.generated import GeneratedRecord


def planted_trace_ids(seed: int, record: GeneratedRecord) -> tuple[str, str]:
    """(trace id, parent span id) in lower-case hex for a planted record; never all zeros."""
    digest = hashlib.sha256(f"mesh-loadgen/{seed}/{record.meta.index}".encode()).digest()
    trace_id, span_id = digest[:16].hex(), digest[16:24].hex()
    # An all-zero id is invalid in W3C trace context; a sha256 prefix practically never is.
    if int(trace_id, 16) == 0 or int(span_id, 16) == 0:
        trace_id, span_id = "1" + trace_id[1:], "1" + span_id[1:]
    return trace_id, span_id


def planted_headers(seed: int, record: GeneratedRecord) -> list[tuple[str, str | bytes | None]]:
    """The ``traceparent`` header (sampled) a tracing sender would put on ``record``."""
    trace_id, span_id = planted_trace_ids(seed, record)
    return [("traceparent", f"00-{trace_id}-{span_id}-01".encode())]
