"""SeriesStore: every series' state, versioned by micro-batch id, in one SQLite file.

The series state lives in the driver (:mod:`series_table`), not in Spark's state store: a Spark
stateful operator cost ~2 s of CPU per 10 s batch for ~80 snapshots (a shuffle, a RocksDB commit
and a pandas frame per series in Python workers; issue 20), nearly all of it fixed per batch.
What Spark's state store gave, this file gives too: the state *as of the end of a batch*, so
that a batch Spark runs again after a crash (same id, same offsets, same timestamp) starts from
the state of the batch before it and writes the very same points.

A batch ``n`` saves, in one transaction, the state of every series it changed as version ``n``,
after dropping anything saved as ``n`` or later (a run of ``n`` that died before Spark committed
it). ``load(n - 1)`` is then, per series, the row with the highest version up to ``n - 1``.
Rows superseded at or before ``n - 1`` are pruned now and then: Spark only ever runs the batch
after its last commit again, so versions ``n - 1`` and ``n`` must stay loadable, no older.

The file sits in the checkpoint folder, next to the query's own checkpoint: a fresh checkpoint
is a fresh state, as before. ``synchronous=FULL``: a version is on disk before Spark commits the
batch that wrote it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

from services.metrics_aggregator.series_step import Series

#: Prune superseded versions every this many saves.
PRUNE_EVERY = 20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS states (
    service TEXT NOT NULL,
    name TEXT NOT NULL,
    tags TEXT NOT NULL,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (service, name, tags, version)
)
"""


class SeriesStore:
    """Versioned JSON states of series (:meth:`SeriesState.to_json`), one SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # One query's batches call it, one at a time, from Py4J's callback threads.
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(_SCHEMA)
        self._saves = 0

    def load(self, version: int) -> dict[Series, str]:
        """Each series' state as saved by the newest batch up to ``version`` (inclusive)."""
        # SQLite returns the other columns of the row that holds the MAX (a documented rule).
        rows = self._db.execute(
            "SELECT service, name, tags, state, MAX(version) FROM states WHERE version <= ? "
            "GROUP BY service, name, tags",
            (version,),
        )
        return {Series(service, name, tags): state for service, name, tags, state, _ in rows}

    def save(self, version: int, states: Mapping[Series, str]) -> None:
        """Batch ``version``'s changed states, replacing whatever a failed run of it saved."""
        rows = [(s.service, s.name, s.tags, version, text) for s, text in states.items()]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("DELETE FROM states WHERE version >= ?", (version,))
            self._db.executemany("INSERT INTO states VALUES (?, ?, ?, ?, ?)", rows)
            self._saves += 1
            if self._saves % PRUNE_EVERY == 0:
                self._prune(version - 1)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _prune(self, keep: int) -> None:
        """Drop rows that ``load(v)`` no longer returns for any ``v >= keep``."""
        self._db.execute(
            "DELETE FROM states WHERE version < (SELECT MAX(newer.version) FROM states AS newer "
            "WHERE newer.service = states.service AND newer.name = states.name "
            "AND newer.tags = states.tags AND newer.version <= ?)",
            (keep,),
        )

    def versions(self) -> int:
        """How many rows are kept (tests: pruning keeps the file bounded)."""
        return int(self._db.execute("SELECT COUNT(*) FROM states").fetchone()[0])

    def close(self) -> None:
        self._db.close()
