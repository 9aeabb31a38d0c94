"""`mesh status --latency`: raw -> alert and raw -> notification per 5 s over the last minutes.

Why: one p99 over a minute (the `mesh status` line) says how bad the tail is, not when. A user who
starts a feed at "ready" wants to see the warm-up end, and the routing hand-overs (a spike every
checkpoint interval, issue 49) as they happen, without a benchmark or docs/benchmarks.md. Both
figures come from what the mesh writes anyway, read by assignment (no group joined):

* **raw -> alert**: each alert's Kafka timestamp less its raw record's (the lineage header);
* **raw -> notification**: each DELIVERED notification's ``delivered_time`` less its
  ``source_time`` (the raw record's timestamp, carried through the notifier), one per channel.

Rows are 5 s of raw-record time (UTC), so a record late in every hop shows in the row of when it
was sent, as a user sees it; a row with neither is left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shared.avro import AvroDeserializer, DecodeError
from shared.kafka.recent_latency import Sample, alert_sample, recent_samples
from shared.latency_picture import BUCKET_S, Bucket, buckets
from shared.percentiles import nearest_rank
from shared.topic_names import TopicNames

#: Records read from each topic at most (the newest), so the view stays quick under load.
MAX_RECORDS = 200_000
#: The minutes `--latency` covers unless asked, and at most (retention keeps more; the read
#: would just take long).
DEFAULT_MINUTES = 5.0
MAX_MINUTES = 60.0

DELIVERED = "DELIVERED"


def notification_sample() -> Callable[[Any], Sample | None]:
    """raw -> notification of a ``notifications`` record: only a delivered one says it."""
    decode = AvroDeserializer("notification").decode

    def sample(message: Any) -> Sample | None:
        try:
            record = decode(message.value())
        except DecodeError:
            return None
        source, delivered = record.get("source_time"), record.get("delivered_time")
        if record.get("status") != DELIVERED or source is None or delivered is None:
            return None
        return Sample(_millis(source), float(_millis(delivered) - _millis(source)))

    return sample


def latency_rows(
    alerts: list[Sample], notified: list[Sample], origin_ms: int
) -> list[tuple[int, Bucket | None, Bucket | None]]:
    """Per 5 s of raw time since ``origin_ms``: the start (epoch ms), the alerts' bucket and the
    notifications' bucket (None when that one had none)."""
    by_alert = {b.start_s: b for b in _buckets(alerts, origin_ms)}
    by_notified = {b.start_s: b for b in _buckets(notified, origin_ms)}
    starts = sorted(by_alert.keys() | by_notified.keys())
    return [(origin_ms + int(s * 1000), by_alert.get(s), by_notified.get(s)) for s in starts]


def render(alerts: list[Sample], notified: list[Sample], minutes: float, origin_ms: int) -> str:
    """The view as printed: a title, the whole window's figures, then a row per 5 s."""
    lines = [f"raw -> alert and raw -> notification over the last {minutes:g} minutes, "
             f"per {BUCKET_S:g} s of raw-record time (UTC), in ms:",
             f"all      {_figures(alerts, 'alerts')}   {_figures(notified, 'notified')}",
             f"{'from':<8} {'alerts':>7} {'p50':>6} {'p99':>6} {'max':>6}   "
             f"{'notified':>8} {'p50':>6} {'p99':>6} {'max':>6}"]  # fmt: skip
    for start_ms, alert, notification in latency_rows(alerts, notified, origin_ms):
        clock = time.strftime("%H:%M:%S", time.gmtime(start_ms / 1000))
        lines.append(f"{clock:<8} {_row(alert, 7)}   {_row(notification, 8)}")
    if not alerts and not notified:
        lines.append("(nothing alerted or notified in that time: is a feed running?)")
    return "\n".join(lines)


def print_latency(bootstrap: str, names: TopicNames, login: Any, minutes: float) -> None:
    """Read the last ``minutes`` of alerts and notifications and print the view."""
    now_ms = int(time.time() * 1000)
    since_ms = now_ms - int(minutes * 60_000)
    origin_ms = since_ms - since_ms % int(BUCKET_S * 1000)  # rows start on the clock's 5 s
    alerts = recent_samples(bootstrap, names.alerts, since_ms, alert_sample, login, MAX_RECORDS)
    notified = recent_samples(bootstrap, names.notifications, since_ms, notification_sample(),
                              login, MAX_RECORDS)  # fmt: skip
    print(render(alerts, notified, minutes, origin_ms))


def _buckets(samples: list[Sample], origin_ms: int) -> list[Bucket]:
    return buckets([s.raw_ms for s in samples], [s.latency_ms for s in samples], origin_ms)


def _figures(samples: list[Sample], label: str) -> str:
    values = [s.latency_ms for s in samples]
    if not values:
        return f"{0:>7} {label}"
    p50, p99 = nearest_rank(values, 50) or 0.0, nearest_rank(values, 99) or 0.0
    return f"{len(values):>7} {label}: p50 {p50:.0f}, p99 {p99:.0f}, max {max(values):.0f}"


def _row(bucket: Bucket | None, width: int) -> str:
    if bucket is None:
        return f"{0:>{width}} {'-':>6} {'-':>6} {'-':>6}"
    return (f"{bucket.count:>{width}} {bucket.p50_ms:>6.0f} {bucket.p99_ms:>6.0f} "
            f"{bucket.max_ms:>6.0f}")  # fmt: skip


def _millis(value: Any) -> int:
    """A timestamp-millis field as the decoder gives it (a datetime, or already ms)."""
    if isinstance(value, int | float):
        return int(value)
    return int(value.timestamp() * 1000)
