"""What is deployed in the local mesh, and whether it should be running.

One JSON file per detector, ``$MESH_HOME/deployments/<name>/deployment.json``: where it was
deployed from, its current and previous release, how many replicas, and the desired state.
``mesh up`` starts every deployment that should run (so ``mesh down`` + ``mesh up`` brings back
what ran); ``mesh stop`` sets it to stopped; a name belongs to one source folder while it runs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from control.deploy.errors import DeployRefused
from control.deploy.releases import Release, snapshot
from shared.file_lock import folder_lock
from shared.json_files import read_json, write_json_atomic

RUNNING, STOPPED = "running", "stopped"
#: Events kept per deployment (deploys, rollouts, rollbacks, stops).
HISTORY_LENGTH = 50


@dataclass(frozen=True)
class Deployment:
    name: str
    #: the folder it was deployed from (absolute)
    source: str
    desired: str
    replicas: int
    current: Release
    previous: Release | None = None
    history: tuple[str, ...] = field(default_factory=tuple)
    #: Set by `mesh scale`: the operator chose ``replicas``, so a rollout keeps it instead of
    #: taking the new manifest's.
    scaled: bool = False
    #: Where its replicas run: "process" (local processes) or "docker" (containers).
    backend: str = "process"
    #: Set by `mesh autoscale`: the autoscale policy's fields, replacing the manifest's block
    #: (``{"off": true}``: not autoscaled whatever the manifest says); None follows the manifest.
    autoscale: dict[str, Any] | None = None
    #: The shadow version running beside it (`mesh rollout --shadow`), as :mod:`.shadow` saves it.
    shadow: dict[str, Any] | None = None

    @property
    def shadow_release(self) -> Release | None:
        """The release the shadow runs, if there is a shadow."""
        return Release(**self.shadow["release"]) if self.shadow else None

    def with_event(self, event: str, **changes: Any) -> Deployment:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        history = (*self.history, f"{stamp} {event}")[-HISTORY_LENGTH:]
        return replace(self, history=history, **changes)


class Registry:
    def __init__(self, home: Path) -> None:
        self.root = home / "deployments"

    def folder(self, name: str) -> Path:
        return self.root / name

    def releases_dir(self, name: str) -> Path:
        return self.folder(name) / "releases"

    def get(self, name: str) -> Deployment | None:
        document = read_json(self.folder(name) / "deployment.json")
        return _from_document(document) if document else None

    def running(self, name: str) -> Deployment:
        """The deployment of ``name`` if it should run; DeployRefused saying what to do if it
        is not deployed or stopped (what scale, autoscale and shadow refuse alike)."""
        deployment = self.get(name)
        if deployment is None:
            known = ", ".join(d.name for d in self.all()) or "none"
            raise DeployRefused(f"no detector {name!r} is deployed (deployed: {known})")
        if deployment.desired != RUNNING:
            raise DeployRefused(f"{name} is stopped: `mesh deploy {deployment.source}` first")
        return deployment

    def all(self) -> list[Deployment]:
        if not self.root.is_dir():
            return []
        found = (self.get(path.name) for path in sorted(self.root.iterdir()))
        return [d for d in found if d is not None]

    def save(self, deployment: Deployment) -> None:
        write_json_atomic(self.folder(deployment.name) / "deployment.json", asdict(deployment))

    def new_release(self, name: str, source: Path, version: str) -> Release:
        """Snapshot ``source`` as the next release of ``name``."""
        return snapshot(source, self.releases_dir(name), self.next_seq(name), version)

    def next_seq(self, name: str) -> int:
        existing = self.get(name)
        if existing is None:
            return 1
        seqs = [existing.current.seq] + ([existing.previous.seq] if existing.previous else [])
        on_disk = [
            int(p.name.split("-", 1)[0])
            for p in self.releases_dir(name).glob("*-*")
            if p.name.split("-", 1)[0].isdigit()
        ]
        return max(seqs + on_disk) + 1

    @contextlib.contextmanager
    def changing(self, name: str) -> Iterator[None]:
        """Hold the detector's lock: two deploys or rollouts of one name never interleave."""
        with folder_lock(self.folder(name), DeployRefused):
            yield


def _from_document(document: dict[str, Any]) -> Deployment | None:
    try:
        previous = document.get("previous")
        return Deployment(
            name=document["name"],
            source=document["source"],
            desired=document["desired"],
            replicas=int(document["replicas"]),
            current=Release(**document["current"]),
            previous=Release(**previous) if previous else None,
            history=tuple(document.get("history", ())),
            scaled=bool(document.get("scaled", False)),
            backend=str(document.get("backend", "process")),
            autoscale=document.get("autoscale"),
            shadow=document.get("shadow"),
        )
    except (KeyError, TypeError, ValueError):
        return None
