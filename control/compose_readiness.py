"""`mesh compose up` promises what `mesh up` does: it returns once the mesh can alert.

Healthy containers are not a mesh that alerts: the compose mesh's health checks passed after
44-46 s, but the first alerts on records sent right then came 25-34 s later, all three detectors
within half a second of each other (issue 34): ingest's Spark job was still planning its first
batch. So after the containers are healthy, the same probe as `mesh up`'s
(:mod:`control.readiness`) goes through the compose mesh's broker: one record of each type its
detectors read, ready once ingest routed it and every detector service's group committed past it.

The readers come from the compose file itself (every service labelled ``mesh.role: detector``,
its detector folder in its command, the group named as the runtime names it), the broker and the
topic prefix from .env (or the environment), as the containers see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from control.readiness import Reader
from shared.detector.manifest import load_manifest
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames

#: Where the detector folders are in a detector service's command (``detectors/<name>``).
DETECTORS_PREFIX = "detectors/"


def compose_settings(settings: Settings, values: dict[str, str], bootstrap: str) -> Settings:
    """``settings`` pointed at the compose mesh ``values`` (.env and the environment) describe:
    its broker nodes as the host reaches them (``bootstrap``: ``ComposeMesh.bootstrap``), its
    topic prefix."""
    return replace(
        settings,
        bootstrap_servers=bootstrap,
        topic_prefix=values.get("MESH_TOPIC_PREFIX", ""),
        kafka_username="",
    )


def compose_readers(config: dict[str, Any], settings: Settings) -> list[Reader]:
    """Each detector service of the compose ``config`` (as ``docker compose config`` prints it)
    as the probe sees it."""
    names = TopicNames.of(settings)
    readers = [
        detector_reader(service.get("command") or [], names)
        for service in config.get("services", {}).values()
        if _labels(service).get("mesh.role") == "detector"
    ]
    return sorted((r for r in readers if r is not None), key=lambda r: r.name)


def detector_reader(command: Sequence[Any], names: TopicNames) -> Reader | None:
    """A detector service's group and inputs, from the detector folder its command names
    (``detectors/<name>``); None for a command that names none."""
    folder = next((str(a) for a in command if str(a).startswith(DETECTORS_PREFIX)), None)
    if folder is None:
        return None
    manifest = load_manifest(PROJECT_ROOT / folder)
    inputs = tuple(manifest.inputs)
    return Reader(manifest.name, names.detector_group(manifest.name), inputs,
                  tuple(names.records(t) for t in inputs))  # fmt: skip


def _labels(service: dict[str, Any]) -> dict[str, str]:
    """A service's labels, a mapping or a list of ``key=value`` (both are valid Compose)."""
    labels = service.get("labels") or {}
    if isinstance(labels, list):
        return dict(str(item).partition("=")[::2] for item in labels)
    return {str(k): str(v) for k, v in labels.items()}
