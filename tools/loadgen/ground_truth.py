"""The answer key of a run, as JSON lines, so detectors and the ingest can be scored.

One line per fact, each with an ``entry`` field:

- ``run``: the first line; the configuration that produced the stream (seed, start time, rules);
- ``alert``: a record that must raise an alert: ``record_id``, ``detector``, ``rule``,
  ``customer_id``, ``pattern_id`` and the pattern's ``details``;
- ``planted``: a record that belongs to a pattern but does not complete it (a burst's earlier
  members); no alert is expected on it alone;
- ``invalid``: a deliberately invalid record: its ``invalid_kind``, ``detail`` and ``index`` (its
  position in the stream, the only identity of records whose ``record_id`` did not survive).

Records are named by topic (``topic``) and by ``index``, so an entry is found both in Kafka and in
the output of a dry run. With ``--trace-planted``, ``alert`` and ``planted`` entries also carry
``trace_id``: the trace the record was sent in.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from tools.loadgen.config import StreamConfig
from tools.loadgen.generated import GeneratedRecord
from tools.loadgen.trace_context import planted_trace_ids


def run_entry(config: StreamConfig, topic_prefix: str) -> dict[str, Any]:
    """The first line: everything needed to regenerate and interpret the stream."""
    return {
        "entry": "run",
        "topic_prefix": topic_prefix,
        "topics": [f"{topic_prefix}.{t}" for t in config.types],
        **dataclasses.asdict(config),
    }


def entries(
    record: GeneratedRecord, topic_prefix: str, trace_seed: int | None = None
) -> Iterator[dict[str, Any]]:
    """Ground-truth lines for one generated record (none for ordinary records). With
    ``trace_seed`` (``--trace-planted``), planted records' lines name their trace."""
    meta = record.meta
    base: dict[str, Any] = {
        "topic": f"{topic_prefix}.{record.topic_suffix}",
        "index": meta.index,
        "record_id": meta.record_id,
        "customer_id": meta.customer_id,
    }
    if trace_seed is not None and meta.is_planted:
        base["trace_id"] = planted_trace_ids(trace_seed, record)[0]
    if meta.invalid_kind is not None:
        yield {
            "entry": "invalid",
            **base,
            "invalid_kind": meta.invalid_kind,
            "detail": meta.invalid_detail,
        }
        return
    if meta.pattern_id is None:
        return
    if not meta.alerts:
        yield {
            "entry": "planted",
            **base,
            "pattern_id": meta.pattern_id,
            "event_time": meta.event_time,
        }
    for alert in meta.alerts:
        yield {
            "entry": "alert",
            **base,
            "event_time": meta.event_time,
            "detector": alert.detector,
            "rule": alert.rule,
            "pattern_id": alert.pattern_id,
            "details": alert.details,
        }


class GroundTruthWriter:
    """Writes the ground-truth file while the stream is produced (no list held in memory)."""

    def __init__(
        self, path: Path, config: StreamConfig, topic_prefix: str, trace_planted: bool = False
    ) -> None:
        self.path = path
        self._topic_prefix = topic_prefix
        self._trace_seed = config.seed if trace_planted else None
        self._header = run_entry(config, topic_prefix)
        self._file: TextIO | None = None

    def __enter__(self) -> GroundTruthWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        self._write(self._header)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def add(self, record: GeneratedRecord) -> None:
        meta = record.meta
        if meta.invalid_kind is None and meta.pattern_id is None:
            return
        for entry in entries(record, self._topic_prefix, self._trace_seed):
            self._write(entry)

    def _write(self, entry: dict[str, Any]) -> None:
        assert self._file is not None, "use GroundTruthWriter as a context manager"
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")


def read_ground_truth(path: Path) -> list[dict[str, Any]]:
    """All entries of a ground-truth file, the ``run`` entry first."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]
