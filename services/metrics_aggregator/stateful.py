"""The ``applyInPandasWithState`` function: pandas frames and Spark's GroupState around
:func:`series_step.step`.

Spark keeps one state value per series, ``(state string)``: the :class:`SeriesState` as JSON.
(A nested struct/array state round-trips out of Python but not back in on pyspark 4.0.0, and
JSON keeps the format versioned.) The processing-time timeout is set to when the first live
instance goes stale, so silent series are re-emitted without their stale instances.

``now`` is ``GroupState.getCurrentProcessingTimeMs()``: the batch's timestamp, which Spark
writes to the checkpoint's offset log before running the batch and reuses when it re-runs that
batch after a crash. That is what makes a replayed batch produce identical rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from services.metrics_aggregator.series_state import REMEMBER_RETIRED, SeriesState
from services.metrics_aggregator.series_step import (
    FLOAT_COLUMNS,
    INT_COLUMNS,
    ROW_COLUMNS,
    Series,
    step,
)
from services.metrics_aggregator.snapshots import snapshot_from_record

#: Spark DDL of the state value and of the output rows.
STATE_SCHEMA = "`state` string"
OUTPUT_SCHEMA = ", ".join(
    f"`{c}` {'long' if c in INT_COLUMNS else 'double' if c in FLOAT_COLUMNS else 'string'}"
    for c in ROW_COLUMNS
)
_PANDAS_TYPES = {c: "Int64" if c in INT_COLUMNS else "float64" for c in ROW_COLUMNS}
_PANDAS_TYPES.update({c: "object" for c in ROW_COLUMNS if c not in INT_COLUMNS | FLOAT_COLUMNS})


class SeriesUpdater:
    """The stateful function, a picklable object (workers import this module to unpickle it)."""

    def __init__(self, stale_after_ms: int, remember: int = REMEMBER_RETIRED) -> None:
        if stale_after_ms <= 0:
            raise ValueError("stale_after_ms must be positive")
        self.stale_after_ms = int(stale_after_ms)
        self.remember = int(remember)

    def __call__(
        self, key: tuple[Any, ...], frames: Iterable[pd.DataFrame], state: Any
    ) -> Iterator[pd.DataFrame]:
        series = Series(*(str(k) for k in key))
        current = SeriesState.from_json(state.get[0]) if state.exists else SeriesState()
        records = [record for frame in frames for record in frame.to_dict("records")]
        records.sort(key=lambda r: (int(r["timestamp"]), int(r["partition"]), int(r["offset"])))
        now_ms = int(state.getCurrentProcessingTimeMs())
        result = step(
            series,
            current,
            map(snapshot_from_record, records),
            now_ms=now_ms,
            stale_after_ms=self.stale_after_ms,
            remember=self.remember,
        )
        state.update((result.state.to_json(),))
        if result.next_timeout_ms is not None:
            state.setTimeoutDuration(max(result.next_timeout_ms - now_ms, 1))
        if result.rows:
            yield rows_frame(result.rows)


def rows_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Output rows as a frame with nullable 64-bit ints (exact counts) and float figures."""
    frame = pd.DataFrame.from_records(rows, columns=list(ROW_COLUMNS))
    return frame.astype(_PANDAS_TYPES)
