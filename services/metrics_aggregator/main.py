"""``python -m services.metrics_aggregator [options]``: run the aggregator until SIGTERM/SIGINT.

Exit codes: 0 stopped on request (or ``--once`` done), 1 a query failed (its batch is redone on
the next start, from the checkpoint), 2 bad options or settings (one line on stderr).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from services.metrics_aggregator.config import NAME, AggregatorConfig
from services.metrics_aggregator.status import STOPPED
from shared.avro.catalogue import Catalogue
from shared.endpoints import resolve_bootstrap
from shared.errors import MeshError
from shared.metrics.instance import instance_id
from shared.service_cli import ServiceArgumentParser, parse_service_args
from shared.settings import Settings

log = logging.getLogger("services.metrics_aggregator")

#: Seconds given to InfluxDB at shutdown to take the points still buffered.
FLUSH_TIMEOUT_S = 5.0


def parser() -> argparse.ArgumentParser:
    p = ServiceArgumentParser(
        prog="python -m services.metrics_aggregator",
        description="Aggregate every instance's metric snapshots into InfluxDB totals.",
    )
    p.add_argument("--checkpoint-dir", type=Path, help=f"default $MESH_HOME/{NAME}/checkpoint")
    p.add_argument(
        "--trigger",
        type=float,
        metavar="SECONDS",
        help="batch interval (default MESH_METRICS_INTERVAL_S: 10)",
    )
    p.add_argument("--once", action="store_true", help="process what is there now, then stop")
    p.add_argument("--master", help="Spark master when run directly (local[2])")
    p.add_argument("--shuffle-partitions", type=int, help="shuffle partitions (2)")
    p.add_argument("--max-offsets-per-trigger", type=int, help="messages per batch (100000)")
    p.add_argument("--topic-prefix", help="default MESH_TOPIC_PREFIX")
    p.add_argument("--stale-after", type=float, metavar="SECONDS",
                   help="default MESH_METRICS_STALE_AFTER_S (60)")  # fmt: skip
    p.add_argument("--instance-id", help="default metrics_aggregator@<host>:<pid>:<start ms>")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_service_args(parser(), argv, NAME)
    if isinstance(args, int):
        return args
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        settings = Settings.from_env()
        if args.topic_prefix is not None:  # one prefix for what it reads and what it reports
            settings = replace(settings, topic_prefix=args.topic_prefix)
        config = AggregatorConfig.from_settings(
            settings,
            checkpoint_dir=args.checkpoint_dir,
            trigger_s=args.trigger,
            once=args.once or None,
            master=args.master,
            shuffle_partitions=args.shuffle_partitions,
            max_offsets_per_trigger=args.max_offsets_per_trigger,
            stale_after_s=args.stale_after,
        )
        bootstrap = resolve_bootstrap(settings)
        catalogue = Catalogue.load(settings.schemas_dir)
    except MeshError as error:
        print(f"{NAME}: error: {error}", file=sys.stderr)
        return 2
    try:
        return run(settings, config, bootstrap, catalogue, args.instance_id)
    except MeshError as error:  # e.g. the connector jars are missing: `make jars`
        print(f"{NAME}: error: {error}", file=sys.stderr)
        return 2


def run(
    settings: Settings,
    config: AggregatorConfig,
    bootstrap: str,
    catalogue: Catalogue,
    instance: str | None,
) -> int:
    """Start the queries and wait for a signal, a failure, or (``--once``) the end."""
    # Spark is imported only now, so bad options are refused in a fraction of a second.
    from services.metrics_aggregator.own_metrics import AggregatorMetrics
    from services.metrics_aggregator.run import AggregatorRun
    from shared.spark_session import C1_ONLY_DRIVER, spark_session, stop_spark

    instance = instance or instance_id(NAME)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    # Under spark-submit (PYSPARK_GATEWAY_PORT set) the --master given there wins.
    master = None if "PYSPARK_GATEWAY_PORT" in settings.environment else config.master
    spark = spark_session("detector-mesh-metrics-aggregator", settings, master,
                          config.shuffle_partitions, C1_ONLY_DRIVER)  # fmt: skip
    run = AggregatorRun.launch(spark, settings, config, instance, catalogue, bootstrap)
    service = run.service
    own = AggregatorMetrics(service, settings)
    own.start()
    service.write_status()
    log.info("%s running queries %s", instance, [q.name for q in run.queries])
    failure = None
    while not stopping.is_set():
        failure = run.failure()
        if failure:
            break
        if config.once and run.caught_up():
            break  # --once: every query got to where the topics ended at start
        own.sync()
        time.sleep(0.5)
    if not run.stop(FLUSH_TIMEOUT_S):
        log.warning("InfluxDB did not take every buffered point before shutdown")
    if failure:
        log.error("%s", failure)
        service.failed(failure)
    else:
        service.write_status(STOPPED)
    own.close()
    stop_spark(spark, keep_archive=not failure)
    log.info("stopped")
    return 1 if failure else 0
