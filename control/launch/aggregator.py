"""The aggregator as a local mesh service: how `mesh up` starts it and `mesh down` stops it.

It runs as ``python -m services.metrics_aggregator`` under its own supervisor
(:mod:`control.supervised_service`: restarted with backoff if it dies), in a :class:`LocalProcess`
called ``metrics_aggregator``, so its pid file and log sit in ``$MESH_HOME/metrics_aggregator/``
next to its status file and checkpoint. ``mesh down`` sends SIGTERM: the queries stop between
batches and buffered points get a last chance to reach InfluxDB.
"""

from __future__ import annotations

import sys

from control.launch.ingest import spark_service_env
from control.supervised_service import start_supervised
from shared.local_process import LocalProcess, ProcessInfo
from shared.service_files import METRICS_AGGREGATOR as NAME
from shared.settings import Settings


def aggregator_process(settings: Settings) -> LocalProcess:
    return LocalProcess(NAME, settings.home)


def start_aggregator(
    settings: Settings, extra_env: dict[str, str] | None = None, trigger_s: float | None = None
) -> tuple[ProcessInfo, bool]:
    """Start the aggregator against the mesh's Kafka (no-op if it runs); (process, started).
    It batches once per reporting interval unless ``trigger_s`` says otherwise."""
    env = spark_service_env(
        settings,
        {
            "MESH_INFLUX_URL": settings.influx_url,
            "MESH_INFLUX_DB": settings.influx_db,
            "MESH_METRICS_STALE_AFTER_S": str(settings.metrics_stale_after_s),
            **(extra_env or {}),
        },
    )
    command = [sys.executable, "-m", "services.metrics_aggregator"]
    if trigger_s is not None:
        command += ["--trigger", str(trigger_s)]
    return start_supervised(aggregator_process(settings), command, env)
