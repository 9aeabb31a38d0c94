"""The whole aggregator in one SparkSession: the service and its two queries, wired once.

The job's main, the tests and the benchmarks all start it here, so the service
(:mod:`~services.metrics_aggregator.service`, the handlers and sinks) and the queries
(:mod:`~services.metrics_aggregator.job`, which call the handlers) never import each other
both ways.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from services.metrics_aggregator.config import AggregatorConfig
from services.metrics_aggregator.job import (
    METRICS,
    WINDOWS,
    offsets_to_reach,
    query_name,
    query_starters,
    stop_queries,
)
from services.metrics_aggregator.job import caught_up as query_caught_up
from services.metrics_aggregator.service import AggregatorService
from shared.avro.catalogue import Catalogue
from shared.endpoints import resolve_bootstrap
from shared.kafka.config import admin_config
from shared.settings import Settings
from shared.spark_query_keeper import QueryKeeper, Uses

log = logging.getLogger(__name__)


@dataclass
class AggregatorRun:
    """The aggregator's two queries running in the caller's SparkSession.

    ``start`` notes where the input topics end, so :meth:`caught_up` can tell when everything
    that was there at start has been aggregated (what ``--once`` waits for).
    """

    service: AggregatorService
    #: the two queries, each held (not failed) while a partition of its topics has no leader
    #: and started again once it has one (:mod:`shared.spark_query_keeper`)
    keeper: QueryKeeper
    targets: dict[str, dict[str, dict[str, int]]]

    @property
    def queries(self) -> list[StreamingQuery]:
        return list(self.keeper.queries.values())

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
        admin = AdminClient({**admin_config(settings, log_level=2), "bootstrap.servers": bootstrap})
        keeper = QueryKeeper(starters, query_topics(config), admin, log.warning)
        return cls(service, keeper, targets)

    def failure(self) -> str | None:
        """Why a query stopped for good, or None while all run, wait or were stopped (see
        :mod:`shared.spark_query_keeper`); what they wait for goes into the status file."""
        failure = self.keeper.look()
        waiting = self.keeper.waiting()
        if waiting != self.service.waiting:
            self.service.waiting = waiting
            self.service.write_status()
        return failure

    def caught_up(self) -> bool:
        """True when every query got to where its topic ended when the run started."""
        return all(query_caught_up(q, self.targets[q.name]) for q in self.queries)

    def stop(self, flush_timeout_s: float = 10.0) -> bool:
        """Stop the queries (between batches when possible) and flush InfluxDB; True if it
        took every point."""
        stop_queries(self.queries)
        self.service.close()
        return self.service.flush(flush_timeout_s)


def query_topics(config: AggregatorConfig) -> dict[str, Uses]:
    """The partitions each query reads and writes: its input's and the dead letters'."""
    return {
        query_name(METRICS): lambda t, n: t in (config.metrics_topic, config.dlq_topic),
        query_name(WINDOWS): lambda t, n: t in (config.windows_topic, config.dlq_topic),
    }
