"""One call of the stateful step for one series: snapshots in, new state and output rows out.

Plain Python, so the whole per-group behaviour is unit-tested without Spark; :mod:`series_table`
runs it per series of a micro-batch, with the batch's clock and the state of the batch before.

Per call: merge the batch's snapshots in the order given (the caller sorts them by timestamp,
then Kafka partition and offset), retire the instances stale at ``now_ms``, then emit

- one ``scope=all`` row when the call had snapshots or retired instances (``snapshots`` on it
  says how many snapshots the call consumed, ignored late ones included), and
- one ``scope=instance`` row per accepted snapshot (a snapshot ignored as late emits nothing).

``next_timeout_ms`` is when the first live instance goes stale if it stays silent: the caller
runs the series again in the first batch whose clock is past it, so a series whose instances
all went silent is still re-emitted without them. Everything depends only on the state, the
snapshots and ``now_ms``; Spark records a batch's processing time in its offset log, and the
series table reads it from there, so a replayed batch gets the same ``now_ms`` and emits
identical rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from services.metrics_aggregator.series_state import REMEMBER_RETIRED, SeriesState
from services.metrics_aggregator.snapshots import FLOAT_FIELDS, Snapshot
from services.metrics_aggregator.totals import total_fields

ALL, INSTANCE = "all", "instance"

#: Columns of an output row, in order (the Spark output schema is built from these).
KEY_COLUMNS = ("service", "name", "tags")
ROW_COLUMNS: tuple[str, ...] = (
    *KEY_COLUMNS,
    "scope",
    "instance",
    "type",
    "time_ms",
    "count",
    *FLOAT_FIELDS,
    "instances",
    "stale_instances",
    "snapshots",
)
INT_COLUMNS = frozenset({"time_ms", "count", "instances", "stale_instances", "snapshots"})
FLOAT_COLUMNS = frozenset(FLOAT_FIELDS)


@dataclass(frozen=True)
class Series:
    """The group key: service, metric name, and its tags in canonical text (see snapshots)."""

    service: str
    name: str
    tags: str


@dataclass
class StepResult:
    state: SeriesState
    rows: list[dict[str, Any]] = field(default_factory=list)
    next_timeout_ms: int | None = None


def step(
    series: Series,
    state: SeriesState,
    snapshots: Iterable[Snapshot],
    *,
    now_ms: int,
    stale_after_ms: int,
    remember: int = REMEMBER_RETIRED,
) -> StepResult:
    """Merge ``snapshots`` into ``state`` (changed in place), retire the stale, emit rows."""
    consumed = 0
    accepted: list[Snapshot] = []
    for snapshot in snapshots:
        consumed += 1
        if state.merge(snapshot):
            accepted.append(snapshot)
    retired = state.expire(now_ms, stale_after_ms, remember)
    rows: list[dict[str, Any]] = []
    if consumed or retired:
        rows.append(total_row(series, state, consumed))
        rows.extend(instance_row(series, snapshot) for snapshot in accepted)
    return StepResult(state, rows, state.next_stale_ms(stale_after_ms))


def total_row(series: Series, state: SeriesState, consumed: int) -> dict[str, Any]:
    row = _row(series, ALL, None, state.type, state.time_ms)
    row.update(total_fields(state))
    row["snapshots"] = consumed
    return row


def instance_row(series: Series, snapshot: Snapshot) -> dict[str, Any]:
    row = _row(series, INSTANCE, snapshot.instance_id, snapshot.type, snapshot.timestamp)
    row.update(snapshot.fields())
    return row


def _row(
    series: Series, scope: str, instance: str | None, kind: str, time_ms: int
) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(ROW_COLUMNS)
    row.update(
        service=series.service,
        name=series.name,
        tags=series.tags,
        scope=scope,
        instance=instance,
        type=kind,
        time_ms=time_ms,
    )
    return row
