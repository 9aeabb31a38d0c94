"""The aggregator's driver-side half: the ``foreachBatch`` handlers, the sinks and the status.

One :class:`AggregatorService` lives for the life of the driver. It owns

- ONE :class:`InfluxWriter` (created when an InfluxDB URL is known: ``MESH_INFLUX_URL``, else the
  mesh's local InfluxDB once it runs), so points buffered while InfluxDB is down survive from
  batch to batch and are retried with backoff; the writer never raises, so InfluxDB being away
  never fails a query;
- the :class:`LineProtocolFiles` under ``$MESH_HOME/metrics/`` (always written);
- the :class:`SeriesTable`: every series' state, in the driver, saved by batch next to the
  checkpoint (created on the first metrics batch);
- the counters the status file and the aggregator's own metrics read.

Every handler ends by refreshing the status file. An exception in a handler (a dead-letter
write the broker refused) fails that query, and the job stops: the batch is redone on restart.

:class:`~services.metrics_aggregator.run.AggregatorRun` wires it to its queries.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from services.metrics_aggregator.checkpoint import batch_timestamp_ms
from services.metrics_aggregator.config import AggregatorConfig, metrics_dir, status_path
from services.metrics_aggregator.dead_letters import write_dead_letters
from services.metrics_aggregator.decode import ERROR_CLASS, invalid, valid
from services.metrics_aggregator.points import series_points, window_points
from services.metrics_aggregator.series import snapshot_columns
from services.metrics_aggregator.series_store import SeriesStore
from services.metrics_aggregator.series_table import SeriesTable
from services.metrics_aggregator.status import (
    FAILED,
    RUNNING,
    Counters,
    InstanceTable,
    status_document,
)
from services.metrics_aggregator.windows import window_counts
from shared import endpoints
from shared.influx.line_protocol import Point
from shared.influx.writer import InfluxWriter, LineProtocolFiles
from shared.json_files import write_json_atomic
from shared.kafka.security import spark_kafka_options
from shared.settings import Settings

log = logging.getLogger(__name__)

METRICS, WINDOWS = "metrics", "windows"
#: Folder of the series states, next to the queries' checkpoint folders.
SERIES_STATE = "series-state"
#: Seconds between two looks for the local InfluxDB when no URL is configured.
LOCAL_INFLUX_CHECK_S = 10.0


class AggregatorService:
    def __init__(
        self,
        settings: Settings,
        config: AggregatorConfig,
        instance_id: str,
        bootstrap: str,
        *,
        find_local_influx: Callable[[Settings], str | None] = endpoints.local_influx_url,
    ) -> None:
        self.settings = settings
        self.config = config
        self.instance_id = instance_id
        self.bootstrap = bootstrap
        #: the login of its Kafka sources and sinks (read once, not per batch)
        self.kafka_options = spark_kafka_options(settings)
        self.counters = Counters()
        self.instances = InstanceTable(config.stale_after_ms)
        self.files = LineProtocolFiles(metrics_dir(settings))
        self.status_file = status_path(settings)
        self.started_s = time.time()
        self.last_error: str | None = None
        #: what its queries wait for (shared/spark_query_keeper.py), for `mesh status`
        self.waiting: list[str] = []
        self._find_local_influx = find_local_influx
        self._influx: InfluxWriter | None = None
        self._influx_checked = float("-inf")
        self._write_lock = threading.Lock()
        self._series: SeriesTable | None = None

    def checkpoint(self, query: str) -> Path:
        """The checkpoint folder of ``query`` (METRICS or WINDOWS)."""
        return self.config.checkpoints(self.settings) / query

    def series_table(self) -> SeriesTable:
        if self._series is None:
            store = SeriesStore(self.config.checkpoints(self.settings) / SERIES_STATE / "states.db")
            self._series = SeriesTable(store, self.config.stale_after_ms,
                                       self.config.remember_retired)  # fmt: skip
        return self._series

    # ------------------------------------------------------------ foreachBatch
    def on_metrics_batch(self, frame: DataFrame, batch_id: int) -> None:
        """Classified metrics rows: snapshots -> per-series state -> points, the others ->
        metrics.dlq. One collect of flat columns (no message bytes) serves both; the dead
        letters are read again from Kafka only when there are some."""
        rows = [row.asDict() for row in snapshot_columns(frame).collect()]
        snapshots = [r for r in rows if r[ERROR_CLASS] is None]
        dead = 0
        if len(snapshots) < len(rows):
            dead = write_dead_letters(invalid(frame), self.bootstrap, self.config.dlq_topic,
                                      self.instance_id, self.kafka_options)  # fmt: skip
        now_ms = batch_timestamp_ms(self.checkpoint(METRICS), batch_id)
        result = self.series_table().apply(batch_id, snapshots, now_ms)
        points = series_points(result.rows)
        self.write_points(points)
        self.instances.update(result.rows)
        self.counters.add(METRICS, snapshots_in=result.snapshots, dead_letters=dead,
                          series_points=len(points))  # fmt: skip
        self.write_status()

    def on_windows_batch(self, frame: DataFrame, batch_id: int) -> None:
        """Classified metrics.windows rows: good ones -> points, bad ones -> metrics.dlq."""
        frame.persist()
        try:
            dead = write_dead_letters(
                invalid(frame),
                self.bootstrap,
                self.config.dlq_topic,
                self.instance_id,
                self.kafka_options,
            )
            good = valid(frame)
            received = good.count()
            rows = [row.asDict() for row in window_counts(good).collect()] if received else []
        finally:
            frame.unpersist()
        points = window_points(rows)
        self.write_points(points)
        self.counters.add(
            WINDOWS, dead_letters=dead, window_counts_in=received, window_points=len(points)
        )
        self.write_status()

    # ------------------------------------------------------------ sinks
    def write_points(self, points: Sequence[Point]) -> None:
        if not points:
            return
        with self._write_lock:
            self.files.write(points)
            writer = self.influx_writer()
            if writer is not None:
                writer.write(points)

    def influx_writer(self) -> InfluxWriter | None:
        """The driver's one writer; created on first use once a URL is known."""
        if self._influx is None:
            url = self.settings.influx_url
            now = time.monotonic()
            if not url and now - self._influx_checked >= LOCAL_INFLUX_CHECK_S:
                self._influx_checked = now
                url = self._find_local_influx(self.settings) or ""
            if url:
                self._influx = InfluxWriter(url, self.settings.influx_db)
                log.info("writing points to InfluxDB %s, database %s", url, self.settings.influx_db)
        return self._influx

    def close(self) -> None:
        """Let go of the series states' file (after the queries stopped)."""
        if self._series is not None:
            self._series.store.close()
            self._series = None

    def flush(self, timeout_s: float) -> bool:
        """Send what InfluxDB has not taken yet; True when nothing is left (or no InfluxDB)."""
        with self._write_lock:
            return self._influx.flush(timeout_s) if self._influx is not None else True

    # ------------------------------------------------------------ status
    def status(self, state: str = RUNNING) -> dict[str, Any]:
        writer = self._influx
        return status_document(
            instance_id=self.instance_id,
            state=state,
            started_s=self.started_s,
            counters=self.counters.snapshot(),
            instances=self.instances.figures(int(time.time() * 1000)),
            files=self.files.stats(),
            files_dir=str(self.files.directory),
            influx=writer.stats() if writer is not None else None,
            influx_target=(writer.url, writer.database) if writer is not None else None,
            topics={
                "metrics": self.config.metrics_topic,
                "windows": self.config.windows_topic,
                "dlq": self.config.dlq_topic,
            },
            last_error=self.last_error,
            waiting=self.waiting,
        )

    def write_status(self, state: str = RUNNING) -> None:
        try:
            write_json_atomic(self.status_file, self.status(state))
        except OSError as error:  # a status hiccup must not fail a batch
            log.warning("cannot write %s: %s", self.status_file, error)

    def failed(self, message: str) -> None:
        self.last_error = message[:1000]
        self.write_status(FAILED)
