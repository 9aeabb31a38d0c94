"""The end-to-end ledger of a run with planted frauds: what every hop did with them, and the
suite's strongest claim checked on it (issue 48):

    every planted fraud reaches every channel its alert is routed to exactly once; a channel
    gets an alert again only while that delivery was in flight (the notifier had not recorded
    it delivered), and then with the same idempotency key.

Read as a user could: the ground truth `mesh produce` writes (detector, source record, event
time of each planted fraud), the audit log the shipped rules send every alert to (it carries the
alert whole), and the webhook receiver's record (a repeat of a key is marked). Which channels an
alert should reach is the notifier's own routing file applied to that alert.

An upstream duplicate (a detector replica or ingest killed and processing again) is the same
alert again, with the same id (:func:`shared.detector.alerts.alert_id`), which the notifier's
book suppresses: a second alert id for one planted fraud fails the ledger, and so does a
delivery of a key after the notifier had recorded that key DELIVERED in its changelog (the
record's timestamp, read back from ``notifier.changelog``): from then on the book knows, and
sending it again is telling a person twice. Before it, a repeat is an attempt in flight: the
notifier killed after the receiver took the request and before the record was written, a
webhook answer that came after the channel's timeout (the attempt counted failed and retried),
a record still unacknowledged when a broker fault held the changelog's leader.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.notifier.book import delivery_key
from tools.notification_summary import AlertKey, delivered

#: alert (as the audit log holds it) -> names of the channels the routing sends it to
Router = Callable[[Mapping[str, Any]], Iterable[str]]


@dataclass(frozen=True)
class Hop:
    """What one hop did with the planted frauds it should have carried."""

    name: str
    expected: int
    reached: int
    #: copies beyond the first (same key), and how many of them were in flight
    repeats: int = 0
    in_flight: int = 0

    @property
    def missing(self) -> int:
        return self.expected - self.reached

    def line(self) -> str:
        extra = f"{self.repeats} repeated ({self.in_flight} in flight)" if self.repeats else "-"
        return (f"{self.name:<28} {self.expected:>8} {self.reached:>8} {self.missing:>8}  "
                f"{extra}")  # fmt: skip


@dataclass
class Ledger:
    hops: list[Hop] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def table(self) -> list[str]:
        head = f"{'planted frauds, hop':<28} {'expected':>8} {'reached':>8} {'missing':>8}  extra"
        return [head, *(hop.line() for hop in self.hops)]


def ledger(
    planted: set[AlertKey],
    audit: Sequence[dict[str, Any]],
    channels: Mapping[str, Sequence[dict[str, Any]]],
    route: Router,
    recorded_ms: Mapping[str, float],
) -> Ledger:
    """Judge the planted frauds' way through the notifier.

    ``audit`` is the audit log's lines (every alert, whole); ``channels`` each channel's
    deliveries by name, the audit log's own included (a line per delivery, a repeat again);
    ``recorded_ms`` when the notifier first recorded each delivery DELIVERED (epoch ms, by its
    book's key ``<alert_id>/<channel>``)."""
    book = Ledger()
    alerts = _planted_alerts(planted, audit, book)
    book.hops.append(Hop("alerted (in the audit log)", len(planted), len(alerts)))
    for name, lines in channels.items():
        expected = {key for key, alert in alerts.items() if name in set(route(alert))}
        book.hops.append(_channel_hop(name, expected, lines, recorded_ms, book.failures))
    missing = planted - alerts.keys()
    if missing:
        book.failures.append(f"{len(missing)} of {len(planted)} planted frauds never alerted "
                             f"to a person (e.g. {sorted(missing)[0]})")  # fmt: skip
    return book


def _planted_alerts(
    planted: set[AlertKey], audit: Sequence[dict[str, Any]], book: Ledger
) -> dict[AlertKey, Mapping[str, Any]]:
    """The alert of each planted fraud in the audit log; a second alert id for one fraud fails."""
    ids: dict[AlertKey, set[str]] = defaultdict(set)
    alerts: dict[AlertKey, Mapping[str, Any]] = {}
    for line in audit:
        (key,) = delivered([line])
        if key in planted:
            ids[key].add(str(line["alert_id"]))
            alerts.setdefault(key, line["alert"])
    twice = sorted(key for key, found in ids.items() if len(found) > 1)
    if twice:
        book.failures.append(f"{len(twice)} planted frauds alerted under more than one alert "
                             f"id (e.g. {twice[0]}: {sorted(ids[twice[0]])})")  # fmt: skip
    return alerts


def _channel_hop(
    name: str,
    expected: set[AlertKey],
    lines: Sequence[dict[str, Any]],
    recorded_ms: Mapping[str, float],
    failures: list[str],
) -> Hop:
    """One channel: every expected alert delivered, and each key's repeats in flight only."""
    first_ms: dict[str, float] = {}
    keys: dict[str, AlertKey] = {}
    repeats, in_flight, stray = 0, 0, []
    for line in lines:
        key, at = str(line["alert_id"]), float(line.get("at_ms", line.get("delivered_ms", 0)))
        if key not in first_ms:
            first_ms[key] = at
            (keys[key],) = delivered([line])
            continue
        repeats += 1
        if at < recorded_ms.get(delivery_key(key, name), float("inf")):
            in_flight += 1
        else:
            stray.append(key)
    reached = expected & set(keys.values())
    if stray:
        failures.append(f"{name}: {len(stray)} deliveries repeated after the notifier had "
                        f"recorded them delivered (e.g. {stray[0]}): a person was told "
                        "twice")  # fmt: skip
    if reached != expected:
        lost = sorted(expected - reached)
        failures.append(f"{name}: {len(lost)} of {len(expected)} planted frauds routed to it "
                        f"never delivered (e.g. {lost[0]})")  # fmt: skip
    per_fraud = Counter(keys.values())
    split = sorted(k for k in expected if per_fraud[k] > 1)
    if split:
        failures.append(f"{name}: {len(split)} planted frauds delivered under two keys "
                        f"(e.g. {split[0]})")  # fmt: skip
    return Hop(name, len(expected), len(reached), repeats, in_flight)
