"""The reference detectors as local mesh services: what `mesh up` starts and `mesh down` stops.

Every folder under detectors/ with a manifest.yaml runs as ``replicas`` processes of
``python -m services.detector_runtime detectors/<name>``, each a supervised local process
(``$MESH_HOME/detector-<name>-<i>/``), all in the detector's own consumer group.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shared.detector.manifest import Manifest, load_manifest
from shared.kafka.config import resolve_bootstrap
from shared.local_process import LocalProcess, ProcessInfo
from shared.settings import PROJECT_ROOT, Settings

DETECTORS_DIR = PROJECT_ROOT / "detectors"


def detector_manifests(folder: Path = DETECTORS_DIR) -> list[Manifest]:
    """Every detector folder's manifest, sorted by name."""
    return sorted(
        (load_manifest(path.parent) for path in folder.glob("*/manifest.yaml")),
        key=lambda m: m.name,
    )


def instance(settings: Settings, name: str, index: int) -> LocalProcess:
    return LocalProcess(f"detector-{name}-{index}", settings.home)


def start_detector(settings: Settings, manifest: Manifest) -> list[tuple[ProcessInfo, bool]]:
    """Start the manifest's replicas (those already running are left alone)."""
    env = {**os.environ, "MESH_BOOTSTRAP_SERVERS": resolve_bootstrap(settings)}
    folder = manifest.folder or DETECTORS_DIR / manifest.name
    command = [sys.executable, "-m", "services.detector_runtime", str(folder)]
    return [
        instance(settings, manifest.name, i).start(command, env) for i in range(manifest.replicas)
    ]


def stop_detector(settings: Settings, manifest: Manifest) -> list[ProcessInfo]:
    """Stop every replica of the detector (SIGTERM: finish the batch, commit, leave the group)."""
    stopped = []
    for i in range(manifest.replicas):
        info = instance(settings, manifest.name, i).stop()
        if info is not None:
            stopped.append(info)
    return stopped
