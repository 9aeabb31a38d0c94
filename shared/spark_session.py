"""The SparkSession of an ingest (or any Spark) job: local connector jars, loopback, RocksDB state.

The Kafka and Avro connectors come from the jar cache as local files (``spark.jars``), so a job
never downloads at start. Under spark-submit the master and jars given on the command line win.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from shared.jar_cache import spark_connector_jars
from shared.settings import Settings

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def spark_session(
    app_name: str, settings: Settings, master: str | None, shuffle_partitions: int
) -> SparkSession:
    """A session for ``app_name``; ``master=None`` keeps whatever spark-submit chose."""
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
    }
    if master is None or master.startswith("local"):
        options["spark.driver.host"] = "127.0.0.1"
        options["spark.driver.bindAddress"] = "127.0.0.1"
    for key, value in options.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
