"""The SparkSession of an ingest (or any Spark) job: local connector jars, loopback, RocksDB state.

The Kafka and Avro connectors come from the jar cache as local files (``spark.jars``), so a job
never downloads at start. Under spark-submit the master and jars given on the command line win.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from shared.jar_cache import spark_connector_jars
from shared.settings import Settings

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def spark_session(
    app_name: str,
    settings: Settings,
    master: str | None,
    shuffle_partitions: int,
    extra: Mapping[str, str] | None = None,
) -> SparkSession:
    """A session for ``app_name``; ``master=None`` keeps whatever spark-submit chose; ``extra``
    options of the job's own (its scheduler, for ingest) come on top."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    scratch = settings.home / "spark" / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    jars = ",".join(str(p) for p in spark_connector_jars(settings))
    options = {
        "spark.jars": jars,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # stage bars would fill the service's log
        "spark.local.dir": str(scratch),
        "spark.sql.session.timeZone": "UTC",
        # A malformed record must never fail a batch: expressions yield NULL instead of raising.
        "spark.sql.ansi.enabled": "false",
        "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "false",
        # Not -XX:-DontCompileHugeMethods: ingest's validation makes generated methods over
        # HotSpot's 8 000-byte limit, which then run interpreted, and compiling them was 15 %
        # faster on a warm JVM alone, but on the whole mesh at 1 000 records/s, warming up, ingest
        # routed 577 records/s with it and 933 without (issue 29, docs/benchmarks.md).
    }
    if master is None or master.startswith("local"):
        options["spark.driver.host"] = "127.0.0.1"
        options["spark.driver.bindAddress"] = "127.0.0.1"
    for key, value in {**options, **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
