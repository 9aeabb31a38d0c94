"""The whole aggregator in one SparkSession: the service and its two queries, wired once.

The job's main, the tests and the benchmarks all start it here, so the service
(:mod:`~services.metrics_aggregator.service`, the handlers and sinks) and the queries
(:mod:`~services.metrics_aggregator.job`, which call the handlers) never import each other
both ways.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from services.metrics_aggregator.config import AggregatorConfig
from services.metrics_aggregator.job import caught_up as query_caught_up
from services.metrics_aggregator.job import offsets_to_reach, query_starters, stop_queries
from services.metrics_aggregator.service import AggregatorService
from shared.avro.catalogue import Catalogue
from shared.endpoints import resolve_bootstrap
from shared.settings import Settings
from shared.spark_bugs import REPLAY_METRICS_RETRIES, is_replay_metrics_fault

log = logging.getLogger(__name__)


@dataclass
class AggregatorRun:
    """The aggregator's two queries running in the caller's SparkSession.

    ``start`` notes where the input topics end, so :meth:`caught_up` can tell when everything
    that was there at start has been aggregated (what ``--once`` waits for).
    """

    service: AggregatorService
    queries: list[StreamingQuery]
    targets: dict[str, dict[str, dict[str, int]]]
    #: how to start each query again, by name (a query met by a known Spark fault)
    starters: dict[str, Callable[[], StreamingQuery]] = field(default_factory=dict)
    #: how often each query was started again
    retries: dict[str, int] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        spark: SparkSession,
        settings: Settings,
        checkpoint_dir: Path,
        *,
        influx_url: str | None = None,
        influx_db: str | None = None,
        trigger_s: float = 1.0,
        instance_id: str = "metrics_aggregator@test",
    ) -> AggregatorRun:
        if influx_url is not None:
            settings = replace(settings, influx_url=influx_url)
        if influx_db is not None:
            settings = replace(settings, influx_db=influx_db)
        config = AggregatorConfig.from_settings(
            settings, checkpoint_dir=Path(checkpoint_dir), trigger_s=trigger_s
        )
        catalogue = Catalogue.load(settings.schemas_dir)
        return cls.launch(spark, settings, config, instance_id, catalogue)

    @classmethod
    def launch(
        cls,
        spark: SparkSession,
        settings: Settings,
        config: AggregatorConfig,
        instance_id: str,
        catalogue: Catalogue,
        bootstrap: str | None = None,
    ) -> AggregatorRun:
        """The one wiring of the service and its queries (the job's main and the tests)."""
        bootstrap = resolve_bootstrap(settings) if bootstrap is None else bootstrap
        service = AggregatorService(settings, config, instance_id, bootstrap)
        targets = offsets_to_reach(service)
        starters = query_starters(spark, service, catalogue)
        return cls(service, [start() for start in starters.values()], targets, starters)

    def failure(self) -> str | None:
        """Why a query stopped by itself, or None while all run (or were stopped). A query that
        died of SPARK-55271 after replaying a batch (:mod:`shared.spark_bugs`) is started again
        in place, up to REPLAY_METRICS_RETRIES times a run, instead of failing the job."""
        for index, query in enumerate(self.queries):
            error = query.exception()
            if error is None:
                continue
            tries = self.retries.get(query.name, 0)
            if (
                query.name in self.starters
                and is_replay_metrics_fault(error)
                and (tries < REPLAY_METRICS_RETRIES)
            ):
                log.warning("query %s hit SPARK-55271 after replaying its last batch: "
                            "starting it again", query.name)  # fmt: skip
                self.retries[query.name] = tries + 1
                self.queries[index] = self.starters[query.name]()
                continue
            return f"query {query.name} stopped: {error}"
        return None

    def caught_up(self) -> bool:
        """True when every query got to where its topic ended when the run started."""
        return all(query_caught_up(q, self.targets[q.name]) for q in self.queries)

    def stop(self, flush_timeout_s: float = 10.0) -> bool:
        """Stop the queries (between batches when possible) and flush InfluxDB; True if it
        took every point."""
        stop_queries(self.queries)
        self.service.close()
        return self.service.flush(flush_timeout_s)
