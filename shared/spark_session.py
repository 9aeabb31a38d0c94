"""The SparkSession of an ingest (or any Spark) job: local connector jars, loopback, RocksDB state.

The Kafka and Avro connectors come from the jar cache as local files (``spark.jars``), so a job
never downloads at start. Under spark-submit the master and jars given on the command line win.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession

from shared.class_archive import ClassArchive, class_archive
from shared.jar_cache import spark_connector_jars
from shared.settings import Settings
from shared.spark_master import on_loopback

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

#: What makes a session read and write Delta tables, and run Delta's SQL.
DELTA_OPTIONS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

#: For a long-running service's driver JVM (which runs the tasks too, in local mode): compile with
#: C1 only. A batch every few seconds or a minute keeps C2 compiling for many minutes, CPU taken
#: from the live path, and buys these jobs nothing measurable: the aggregator used 36.3 s of CPU
#: in its first 120 s instead of 61.6; the history, storing 1 000 records/s, 4.0 s a minute
#: instead of 5.3-6.1 once warm, and a 1 000 000-record backlog as fast (34.0 s against 33.2)
#: (docs/benchmarks.md, issues 29 and 31). Under spark-submit the JVM is already running: no effect.
C1_ONLY_DRIVER = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}

#: What a long-running job's driver keeps of its past, bounded (the soak, issue 48: the history's
#: and the aggregator's live heap after a full collection rose ~55-60 MiB an hour; heap dumps
#: after 3 and 26 minutes of feed named two owners, docs/reliability.md "A fifth run"):
#:
#: * Spark's status store, which runs with the UI off: every SQL execution with its plan graph
#:   (16 KiB each in the aggregator, 44 KiB in the history), stage and job, up to 1 000 of each
#:   by default: ~24 MiB for the aggregator within 25 minutes, ~48 MiB for the history within
#:   the hour. Nothing here reads them (no UI; the jobs' own figures come from query progress),
#:   and 50 executions, 100 jobs and 100 stages leave a few MiB;
#: * Avro 1.12's fast reader (spark-avro's ``from_avro``, which the history and the aggregator
#:   decode with): it caches a reader per parsed schema in a weak map whose values hold their own
#:   keys, and ``from_avro`` parses its schema again in every task, so nothing is ever freed:
#:   ~41 MiB an hour in the aggregator, ~17 in the history, without a ceiling (AVRO-3524). Off,
#:   Avro decodes through its resolving decoder, which keeps nothing per schema.
BOUNDED_PAST = {
    "spark.sql.ui.retainedExecutions": "50",
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
}
AVRO_FAST_READER_OFF = "-Dorg.apache.avro.fastread=false"

#: Seconds a clean stop waits for its driver JVM to write a first class archive.
ARCHIVE_WRITE_TIMEOUT_S = 40.0

#: The archive this process's driver JVM writes when it exits, if it is the first of its kind.
_writing: ClassArchive | None = None


def spark_session(
    app_name: str,
    settings: Settings,
    master: str | None,
    shuffle_partitions: int,
    extra: Mapping[str, str] | None = None,
    *,
    delta: bool = False,
) -> SparkSession:
    """A session for ``app_name``; ``master=None`` keeps whatever spark-submit chose; ``extra``
    options of the job's own (its scheduler, for ingest) come on top; ``delta`` loads Delta Lake
    (the history's table format) and its SQL (OPTIMIZE, VACUUM, time travel)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    scratch = settings.home / "spark" / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    connector_jars = spark_connector_jars(settings, delta=delta)
    jars = ",".join(str(p) for p in connector_jars)
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
        **BOUNDED_PAST,
        # Not -XX:-DontCompileHugeMethods: ingest's validation makes generated methods over
        # HotSpot's 8 000-byte limit, which then run interpreted, and compiling them was 15 %
        # faster on a warm JVM alone, but on the whole mesh at 1 000 records/s, warming up, ingest
        # routed 577 records/s with it and 933 without (issue 29, docs/benchmarks.md).
    }
    if delta:
        options.update(DELTA_OPTIONS)
    if master is None or master.startswith("local") or on_loopback(master):
        options["spark.driver.host"] = "127.0.0.1"
        options["spark.driver.bindAddress"] = "127.0.0.1"
    options = {**options, **(extra or {})}
    for side in ("driver", "executor"):  # on top of the job's own JVM options, not instead
        key = f"spark.{side}.extraJavaOptions"
        options[key] = " ".join([*options.get(key, "").split(), AVRO_FAST_READER_OFF])
    archive = None
    if not _jvm_running(settings):
        archive = _driver_archive(settings, app_name, connector_jars)
    if archive is not None:
        java_options = options.get("spark.driver.extraJavaOptions", "").split()
        options["spark.driver.extraJavaOptions"] = " ".join(java_options + archive.java_options)
    for key, value in options.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    global _writing
    _writing = archive if archive is not None and archive.pending is not None else None
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _jvm_running(settings: Settings) -> bool:
    """This process has its driver JVM already (spark-submit started it, or an earlier session
    did): the JVM's options are fixed, no archive to choose."""

    return "PYSPARK_GATEWAY_PORT" in settings.environment or SparkContext._gateway is not None


def _driver_archive(settings: Settings, app_name: str, jars: list[Path]) -> ClassArchive | None:
    """The class archive of this application's driver JVM: Spark's own jars, then the
    connectors (:mod:`shared.class_archive`)."""

    spark_jars = Path(pyspark.__file__).parent / "jars" / "*"
    return class_archive(settings, app_name, [spark_jars, *jars])


def stop_spark(spark: SparkSession, keep_archive: bool = True) -> None:
    """Stop ``spark``; on a clean stop (``keep_archive``) of the first driver JVM of its kind,
    also end the JVM the way pyspark does (its stdin closes, and it exits), give it time to
    write its class archive, and keep the archive if it is complete.

    A failing service passes False, so its supervisor hears of the failure at once: its JVM
    still writes at exit, on its own, and the next start keeps the file if it is complete (as
    it does for any process that ends without calling this)."""

    spark.stop()
    archive = _writing
    process = getattr(SparkContext._gateway, "proc", None)
    if not keep_archive or archive is None or process is None:
        return
    with contextlib.suppress(Exception):  # already closed: the JVM is on its way out anyway
        SparkContext._gateway.shutdown()  # type: ignore[union-attr]
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=ARCHIVE_WRITE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return  # left to finish on its own: the next start keeps the file if it is complete
    archive.keep()
