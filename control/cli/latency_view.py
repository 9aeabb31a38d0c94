"""`mesh status --latency`: raw -> alert and raw -> notification per 5 s over the last minutes.

Why: one p99 over a minute (the `mesh status` line) says how bad the tail is, not when. A user who
starts a feed at "ready" wants to see the warm-up end, and the routing hand-overs (a spike every
checkpoint interval, issue 49) as they happen, without a benchmark or docs/benchmarks.md. Both
figures come from what the mesh writes anyway, read by assignment (no group joined):

* **raw -> alert**: each alert's Kafka timestamp less its raw record's (the lineage header);
* **raw -> notification**: each DELIVERED notification's ``delivered_time`` less its
  ``source_time`` (the raw record's timestamp, carried through the notifier), one per channel
  delivery. ``notifications`` is compacted by alert id once a segment rolls (10 minutes), so
  further back an alert routed to several channels keeps only its last channel's record.

Rows are 5 s of raw-record time (UTC), so a record late in every hop shows in the row of when it
was sent, as a user sees it; a row with neither is left out. The records read are those written
since the first row's start, and of those the ones whose raw record is in the window: a record is
never written before its raw record, so every row is complete but the newest, which may still
fill. A read that did not reach the end of a topic in time says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shared.kafka.recent_latency import Sample, alert_sample, recent_samples, summarize
from shared.latency_picture import BUCKET_S, Bucket, buckets
from shared.topic_names import TopicNames

#: Records read from each topic at most (the newest), and how long each read may take, so the
#: view stays quick under load (5 minutes of alerts at 1 % of 3 000 records/s are 9 000).
MAX_RECORDS = 50_000
READ_TIMEOUT_S = 20.0
#: The minutes `--latency` covers unless asked, and at most (retention keeps more; the read
#: would just take long).
DEFAULT_MINUTES = 5.0
MAX_MINUTES = 60.0

DELIVERED = "DELIVERED"


def notification_sample() -> Callable[[Any], Sample | None]:
    """raw -> notification of a ``notifications`` record: only a delivered one says it."""
    # here, not at the top: `mesh` parses its arguments without fastavro (test_import_placement)
    from shared.avro import AvroDeserializer, DecodeError

    decode = AvroDeserializer("notification").decode

    def sample(message: Any) -> Sample | None:
        try:
            record = decode(message.value())
        except DecodeError:
            return None
        # epoch ms: the project's codec decodes timestamp-millis as the long it is
        source, delivered = record.get("source_time"), record.get("delivered_time")
        if record.get("status") != DELIVERED or source is None or delivered is None:
            return None
        return Sample(int(source), float(delivered - source))

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


def render(
    alerts: list[Sample],
    notified: list[Sample],
    minutes: float,
    origin_ms: int,
    partial: tuple[str, ...] = (),
) -> str:
    """The view as printed: a title, the whole window's figures, then a row per 5 s; ``partial``:
    the topics whose read stopped before their end (their newest records are missing)."""
    alerts = [s for s in alerts if s.raw_ms >= origin_ms]
    notified = [s for s in notified if s.raw_ms >= origin_ms]
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
    for topic in partial:
        lines.append(f"(partial: {topic} was not read to its end in {READ_TIMEOUT_S:g} s; "
                     "its newest records are missing)")  # fmt: skip
    return "\n".join(lines)


def print_latency(bootstrap: str, names: TopicNames, login: Any, minutes: float) -> None:
    """Read the last ``minutes`` of alerts and notifications and print the view."""
    since_ms = int(time.time() * 1000) - int(minutes * 60_000)
    origin_ms = since_ms - since_ms % int(BUCKET_S * 1000)  # rows start on the clock's 5 s
    alerts = recent_samples(bootstrap, names.alerts, origin_ms, alert_sample, login,
                            MAX_RECORDS, read_s=READ_TIMEOUT_S)  # fmt: skip
    notified = recent_samples(bootstrap, names.notifications, origin_ms, notification_sample(),
                              login, MAX_RECORDS, read_s=READ_TIMEOUT_S)  # fmt: skip
    reads = {names.alerts: alerts, names.notifications: notified}
    partial = tuple(topic for topic, read in reads.items() if not read.complete)
    print(render(alerts.samples, notified.samples, minutes, origin_ms, partial))


def _buckets(samples: list[Sample], origin_ms: int) -> list[Bucket]:
    return buckets([s.raw_ms for s in samples], [s.latency_ms for s in samples], origin_ms)


def _figures(samples: list[Sample], label: str) -> str:
    whole = summarize([s.latency_ms for s in samples], 0.0)
    if not whole.count:
        return f"{0:>7} {label}"
    return (f"{whole.count:>7} {label}: p50 {whole.p50_ms:.0f}, p99 {whole.p99_ms:.0f}, "
            f"max {whole.max_ms:.0f}")  # fmt: skip


def _row(bucket: Bucket | None, width: int) -> str:
    if bucket is None:
        return f"{0:>{width}} {'-':>6} {'-':>6} {'-':>6}"
    return (f"{bucket.count:>{width}} {bucket.p50_ms:>6.0f} {bucket.p99_ms:>6.0f} "
            f"{bucket.max_ms:>6.0f}")  # fmt: skip
