"""The history job as a local mesh service: how `mesh up` starts it and `mesh down` stops it.

It runs as ``python -m services.history`` under its own supervisor
(:mod:`control.supervised_service`: restarted with backoff if it dies), in a :class:`LocalProcess`
called ``history``, so its pid file and log sit in ``$MESH_HOME/history/`` beside its checkpoint
and (by default) its tables. A restart resumes from the checkpoint and writes each record once
(docs/history.md). ``mesh down`` sends SIGTERM: the query stops between batches.
"""

from __future__ import annotations

import sys

from control.launch.ingest import spark_service_env
from control.supervised_service import start_supervised
from shared.local_process import LocalProcess, ProcessInfo
from shared.service_files import HISTORY as NAME
from shared.settings import Settings


def history_process(settings: Settings) -> LocalProcess:
    return LocalProcess(NAME, settings.home)


def start_history(
    settings: Settings, extra_env: dict[str, str] | None = None
) -> tuple[ProcessInfo, bool]:
    """Start the history job against the mesh's Kafka (no-op if it runs); (process, started)."""
    command = [sys.executable, "-m", "services.history"]
    return start_supervised(history_process(settings), command,
                            spark_service_env(settings, extra_env))  # fmt: skip
