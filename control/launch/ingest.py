"""The ingest job as a local mesh service: how `mesh up` starts it and `mesh down` stops it.

The job runs under its own supervisor (:mod:`control.supervised_service`): a job that dies (an
out-of-memory JVM, a broker outage it could not ride out) is restarted with backoff and resumes
from its checkpoint, instead of leaving the raw topics unread until someone notices.
"""

from __future__ import annotations

import os
import sys

from control.supervised_service import start_supervised
from shared.endpoints import resolve_bootstrap, resolve_otlp_endpoint
from shared.local_process import LocalProcess, ProcessInfo
from shared.service_files import INGEST, ingest_status_file
from shared.settings import Settings

NAME = INGEST


def ingest_process(settings: Settings) -> LocalProcess:
    return LocalProcess(NAME, settings.home)


def start_ingest(
    settings: Settings, extra_env: dict[str, str] | None = None
) -> tuple[ProcessInfo, bool]:
    """Start ``python -m services.ingest.job``, supervised, against the mesh's Kafka (no-op if
    it runs). The process returned is the supervisor."""
    env = spark_service_env(settings, extra_env)
    command = [sys.executable, "-m", "services.ingest.job"]
    status = ingest_status_file(settings.home)  # why the job refused to start, if it did
    return start_supervised(ingest_process(settings), command, env, status)


def service_env(settings: Settings, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a service the mesh runs: this mesh's Kafka, home, topic prefix and
    trace backend, resolved once here (the service never looks for them itself)."""
    return {
        **os.environ,
        "MESH_BOOTSTRAP_SERVERS": resolve_bootstrap(settings),
        "MESH_HOME": str(settings.home),
        "MESH_TOPIC_PREFIX": settings.topic_prefix,
        "MESH_OTLP_ENDPOINT": resolve_otlp_endpoint(settings),
        **(extra or {}),
    }


def spark_service_env(settings: Settings, extra: dict[str, str] | None = None) -> dict[str, str]:
    """:func:`service_env` of a Spark job (ingest, the metrics aggregator), with the
    virtualenv's Python for the driver and the workers (Spark's default is the first
    ``python3`` on PATH)."""
    python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return service_env(settings, {**python, **(extra or {})})
