"""``python -m services.history [options]``: keep the history until SIGTERM/SIGINT.

Exit codes: 0 stopped on request (or ``--once`` done), 1 the query failed (its batch is done
again on the next start, from the checkpoint, and written once), 2 bad options or settings (one
line on stderr).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from services.history.config import NAME, HistoryConfig
from services.history.status import HistoryStatus
from shared.avro.catalogue import Catalogue
from shared.cpu_priority import yield_cpu
from shared.errors import MeshError
from shared.kafka.security import spark_kafka_options
from shared.service_cli import ServiceArgumentParser, parse_service_args
from shared.service_files import history_status_file
from shared.settings import Settings

log = logging.getLogger("services.history")

#: The history is for backtests: a minute (or five) late is fine, the live path's tail is not.
#: The job runs at this nice value (its JVM and its session's scheduling group too,
#: :mod:`shared.cpu_priority`), so on a busy machine it takes the CPU that ingest, the
#: detectors and the notifier leave (docs/benchmarks.md, issue 31).
NICENESS = 10

#: Delta rebuilds a table's snapshot after each commit in a Spark job of 50 tasks by default,
#: sized for logs of millions of files; a history table's log holds a few files a day.
SNAPSHOT_PARTITIONS = {"spark.databricks.delta.snapshotPartitions": "2"}


def parser() -> argparse.ArgumentParser:
    p = ServiceArgumentParser(
        prog="python -m services.history",
        description="Append every validated record and alert to the history's Delta tables.",
    )
    p.add_argument("--location", help=f"the tables' root, a Hadoop path (default "
                   f"file://$MESH_HOME/{NAME}/tables)")  # fmt: skip
    p.add_argument("--checkpoint-dir", type=Path, help=f"default $MESH_HOME/{NAME}/checkpoint")
    p.add_argument("--trigger", type=float, metavar="SECONDS", help="batch interval (60)")
    p.add_argument("--once", action="store_true", help="store what is there now, then stop")
    p.add_argument("--master", default="local[2]", help="Spark master when run directly")
    p.add_argument("--topic-prefix", help="default MESH_TOPIC_PREFIX")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_service_args(parser(), argv, NAME)
    if isinstance(args, int):
        return args
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        settings = Settings.from_env()
        config = HistoryConfig.from_settings(
            settings,
            location=args.location,
            checkpoint_dir=args.checkpoint_dir,
            trigger_s=args.trigger,
            once=args.once or None,
            topic_prefix=args.topic_prefix,
        )
        catalogue = Catalogue.load(settings.schemas_dir)
        yield_cpu(NICENESS)
        return run(settings, config, catalogue, args.master)
    except MeshError as error:  # bad settings, or the jars are missing: `make jars`
        print(f"{NAME}: error: {error}", file=sys.stderr)
        return 2


def run(settings: Settings, config: HistoryConfig, catalogue: Catalogue, master: str) -> int:
    """Run the query until a signal, a failure, or (``--once``) the end of what was there."""
    # Spark is imported only now, so bad options are refused in a fraction of a second.
    from services.history.query import start_history_query
    from shared.spark_session import C1_ONLY_DRIVER, spark_session, stop_spark

    kafka_options = spark_kafka_options(settings)  # logs in on a secure mesh (`mesh up --secure`)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    # Under spark-submit (PYSPARK_GATEWAY_PORT set) the --master given there wins.
    chosen = None if "PYSPARK_GATEWAY_PORT" in settings.environment else master
    options = {**SNAPSHOT_PARTITIONS, **C1_ONLY_DRIVER}
    spark = spark_session("detector-mesh-history", settings, chosen, 2, options, delta=True)
    status = HistoryStatus(history_status_file(settings.home), config.location)
    query = start_history_query(spark, config, settings, catalogue, kafka_options, status)
    status.started()
    log.info("keeping the history of %s in %s", config.names.records_family, config.location)
    while query.isActive and not stopping.is_set():
        time.sleep(0.5)
    failure = query.exception()
    if query.isActive:
        query.stop()  # between batches: a batch cut short is written again, once, next start
    status.stopped(str(failure) if failure is not None else None)
    stop_spark(spark, keep_archive=failure is None)
    if failure is not None:
        log.error("the history query failed: %s", failure)
        return 1
    log.info("stopped")
    return 0
