"""The next batch of a consumer, without holding a lone record back for company.

``Consumer.consume(n, timeout)`` returns when it has ``n`` messages *or* the timeout has passed:
asked for 500 with a 0.2 s timeout, it sits on a lone record for the whole 0.2 s. At a low rate
(an alert now and then, a trickle of records) that is a wait on every record; the notifier's
alert -> webhook hop was ~130 ms at the median for it (docs/benchmarks.md, issue 49). So a batch
is first whatever the consumer has already fetched (no wait: under load its prefetch queue is
full and batches stay large), and only when nothing is there does the call block, for the first
record alone, and then take what came with it.
"""

from __future__ import annotations

from typing import Any


def next_batch(consumer: Any, size: int, wait_s: float, fill_s: float = 0.0) -> list[Any]:
    """Up to ``size`` messages of ``consumer``: those already fetched at once; else the first
    to arrive within ``wait_s`` and whatever came with it. ``fill_s`` > 0 instead waits that long
    for the batch to fill once a first record is there (bigger batches at low rates, for a
    latency the caller chose)."""
    messages: list[Any] = consumer.consume(size, timeout=0)
    if messages or wait_s <= 0:
        return messages
    messages = consumer.consume(1, timeout=wait_s)
    if messages and size > 1:
        messages += consumer.consume(size - 1, timeout=fill_s)
    return messages
