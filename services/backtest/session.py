"""The backtest's Spark session: Delta Lake loaded, any master (local, a standalone cluster, or
whatever ``spark-submit`` chose)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from shared.settings import Settings
from shared.spark_session import spark_session

#: Shuffles after the replay are small aggregations (the summary, the comparison).
SHUFFLE_PARTITIONS = 4


def backtest_session(settings: Settings, master: str) -> SparkSession:
    # Under spark-submit (PYSPARK_GATEWAY_PORT set) the --master given there wins.
    chosen = None if "PYSPARK_GATEWAY_PORT" in settings.environment else master
    return spark_session("detector-mesh-backtest", settings, chosen, SHUFFLE_PARTITIONS,
                         delta=True)  # fmt: skip
