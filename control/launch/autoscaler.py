"""The autoscaler as a local mesh process, supervised like the notifier.

``python -m control.autoscale`` in a :class:`LocalProcess` called ``autoscaler``: `mesh up` starts
it (a no-op when no detector is autoscaled: it looks and finds nothing to do), `mesh down` stops
it before the detectors, so no step races the shutdown. It logs in as the control plane does
(the mesh's admin on a secure mesh), because a step starts and stops replicas as `mesh scale`
does.
"""

from __future__ import annotations

import sys

from control.autoscale.autoscaler import AUTOSCALER
from control.launch.ingest import service_env
from control.supervised_service import start_supervised
from shared.local_process import LocalProcess, ProcessInfo
from shared.settings import Settings


def autoscaler_process(settings: Settings) -> LocalProcess:
    return LocalProcess(AUTOSCALER, settings.home)


def start_autoscaler(settings: Settings) -> tuple[ProcessInfo, bool]:
    """Start the autoscaler for this mesh (no-op if it runs); (supervisor, started)."""
    command = [sys.executable, "-m", "control.autoscale"]
    secure = {"MESH_BROKER_SECURE": "true"} if settings.broker_secure else {}
    return start_supervised(autoscaler_process(settings), command, service_env(settings, secure))
