"""The backtest's Spark session: Delta Lake loaded, any master (local, a standalone cluster, or
whatever ``spark-submit`` chose).

On a standalone cluster the executors' Python workers import the replay's modules by name
(``services.backtest``, ``shared``; the detector's own code travels pickled by value): every node
needs the project at the same path, as the mesh's Spark image has it (``/opt/mesh/app``, on its
``PYTHONPATH``), and the history and ``--out`` on storage every node sees.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from shared.settings import PROJECT_ROOT, Settings
from shared.spark_session import spark_session

#: Shuffles after the replay are small aggregations (the summary, the comparison).
SHUFFLE_PARTITIONS = 4


def backtest_session(settings: Settings, master: str) -> SparkSession:
    # Under spark-submit (PYSPARK_GATEWAY_PORT set) the --master given there wins.
    chosen = None if "PYSPARK_GATEWAY_PORT" in settings.environment else master
    return spark_session("detector-mesh-backtest", settings, chosen, SHUFFLE_PARTITIONS,
                         cluster_options(chosen), delta=True)  # fmt: skip


def cluster_options(master: str | None) -> dict[str, str]:
    """What a standalone cluster's executors need: the project on their Python path (a master
    on loopback gets a driver on loopback from :func:`shared.spark_session.spark_session`)."""
    if master is None or not master.startswith("spark://"):
        return {}
    return {"spark.executorEnv.PYTHONPATH": str(PROJECT_ROOT)}
