"""SeriesTable: the per-series stateful step over one micro-batch, run in the driver.

It does what Spark's ``applyInPandasWithState`` with a processing-time timeout did, series by
series, without a shuffle, a state store or a pandas frame per series (issue 20: those cost ~2 s
of CPU per batch whatever it held). Per batch, with ``now_ms`` the batch's timestamp from
Spark's offset log (the same on a re-run of the batch, as ``getCurrentProcessingTimeMs`` was):

- a series with snapshots in the batch gets them, sorted by timestamp, then Kafka partition and
  offset, and :func:`series_step.step` runs on it;
- a series without snapshots runs only when its deadline (the moment its first live instance
  goes stale) is *before* ``now_ms``, as Spark fires a timeout only when its timestamp is less
  than the batch's; then it retires its stale instances (a total without them) or emits nothing.

The states are kept in memory between batches and saved by version (:mod:`series_store`).
The table knows which batch its memory is the end of: any other batch than the next one (a
restart, a batch run again after its query died, a batch that failed half-way) reloads the
state of the batch before it first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.metrics_aggregator.series_state import REMEMBER_RETIRED, SeriesState
from services.metrics_aggregator.series_step import ALL, KEY_COLUMNS, Series, step
from services.metrics_aggregator.series_store import SeriesStore
from services.metrics_aggregator.snapshots import snapshot_from_record


@dataclass
class BatchResult:
    #: Output rows (:data:`series_step.ROW_COLUMNS`) of every series that emitted.
    rows: list[dict[str, Any]]
    #: Snapshots the batch consumed (late ones ignored included).
    snapshots: int


class SeriesTable:
    def __init__(
        self, store: SeriesStore, stale_after_ms: int, remember: int = REMEMBER_RETIRED
    ) -> None:
        if stale_after_ms <= 0:
            raise ValueError("stale_after_ms must be positive")
        self.store = store
        self.stale_after_ms = int(stale_after_ms)
        self.remember = int(remember)
        self._states: dict[Series, SeriesState] = {}
        #: When each series with live instances has to run even without snapshots.
        self._deadlines: dict[Series, int] = {}
        #: The batch id the memory is the end of (None: unknown, load before use).
        self._version: int | None = None

    def apply(
        self, batch_id: int, records: Iterable[Mapping[str, Any]], now_ms: int
    ) -> BatchResult:
        """Run batch ``batch_id``: ``records`` are input rows of the step (service, name, tags,
        instance_id, type, timestamp, count, has_count, figures, partition, offset)."""
        if self._version != batch_id - 1:
            self._load(batch_id - 1)
        self._version = None  # the memory is changed in place until the save succeeds
        grouped: dict[Series, list[Mapping[str, Any]]] = {}
        for record in records:
            key = Series(*(str(record[c]) for c in KEY_COLUMNS))
            grouped.setdefault(key, []).append(record)
        due = [s for s, deadline in self._deadlines.items() if deadline < now_ms]
        rows: list[dict[str, Any]] = []
        changed: dict[Series, str] = {}
        for series in sorted({*grouped, *due}, key=_order):
            batch = sorted(grouped.get(series, ()), key=_position)
            state = self._states.setdefault(series, SeriesState())
            result = step(
                series,
                state,
                map(snapshot_from_record, batch),
                now_ms=now_ms,
                stale_after_ms=self.stale_after_ms,
                remember=self.remember,
            )
            rows.extend(result.rows)
            changed[series] = state.to_json()
            if result.next_timeout_ms is None:
                self._deadlines.pop(series, None)
            else:
                self._deadlines[series] = result.next_timeout_ms
        self.store.save(batch_id, changed)  # also when empty: drops what a failed run saved
        self._version = batch_id
        consumed = sum(int(r["snapshots"]) for r in rows if r["scope"] == ALL)
        return BatchResult(rows, consumed)

    def _load(self, version: int) -> None:
        saved = self.store.load(version)
        self._states = {series: SeriesState.from_json(text) for series, text in saved.items()}
        self._deadlines = {}
        for series, state in self._states.items():
            deadline = state.next_stale_ms(self.stale_after_ms)
            if deadline is not None:
                self._deadlines[series] = deadline
        self._version = version

    def __len__(self) -> int:
        return len(self._states)


def _order(series: Series) -> tuple[str, str, str]:
    return (series.service, series.name, series.tags)


def _position(record: Mapping[str, Any]) -> tuple[int, int, int]:
    return (int(record["timestamp"]), int(record["partition"]), int(record["offset"]))
