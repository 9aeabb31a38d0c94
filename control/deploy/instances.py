"""The replicas of one release, each a supervised local process, and what they report.

Replica ``i`` of release ``seq`` of detector ``name`` is the local process
``detector-<name>-r<seq>-<i>`` (``$MESH_HOME/detector-<name>-r<seq>-<i>/``). Its supervisor
(:mod:`control.supervisor`) keeps ``supervisor.json``; the detector runtime keeps
``instance.json``. Naming by release lets a rollout run the new version next to the old one in
the same consumer group, and stop exactly the old replica it replaces.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from control.deploy.releases import Release
from control.security.logins import detector_login
from control.supervised_service import start_supervised, supervisor_file
from shared.detector.manifest import load_manifest
from shared.endpoints import resolve_bootstrap, resolve_otlp_endpoint
from shared.json_files import read_json
from shared.local_process import LocalProcess, ProcessInfo
from shared.process_usage import ProcessUsage, process_usage
from shared.settings import Settings
from shared.topic_names import TopicNames


@dataclass(frozen=True)
class InstanceView:
    """One replica as `mesh status` and the health check see it."""

    process: str
    index: int
    seq: int
    #: the supervisor: None (not running), "running", "backoff" or "stopped"
    supervisor: str | None
    pid: int | None
    child_started: float | None
    restarts: int
    last_exit: str | None
    #: the runtime's own report (instance.json), {} before the first one
    report: dict[str, Any]
    usage: ProcessUsage | None

    @property
    def alive(self) -> bool:
        return self.supervisor == "running" and self.pid is not None and self.usage is not None

    @property
    def uptime_s(self) -> float:
        return time.time() - self.child_started if self.alive and self.child_started else 0.0

    @property
    def last_error(self) -> str | None:
        return self.last_exit or self.report.get("last_error")


def replica_name(detector: str, seq: int, index: int) -> str:
    """Replica ``index`` of release ``seq``: its process's name and its folder under MESH_HOME,
    whichever backend runs it (the docker backend prefixes its containers' names with mesh-)."""
    return f"detector-{detector}-r{seq}-{index}"


def shadow_name(detector: str, seq: int, index: int) -> str:
    """Replica ``index`` of a shadow of release ``seq`` (`mesh rollout --shadow`): never matched
    by the live replicas' names, so no live command stops or counts it."""
    return f"detector-{detector}-shadow{seq}-{index}"


def shadow_arguments(settings: Settings, detector: str) -> list[str]:
    """What makes a runtime a shadow, whichever backend runs it: its own group and changelog,
    and the shadow alerts topic."""
    names = TopicNames.of(settings)
    return [
        "--group", names.shadow_group(detector),
        "--alerts-topic", names.alerts_shadow,
        "--changelog-topic", names.shadow_changelog(detector),
    ]  # fmt: skip


def replica_environment(
    settings: Settings, home: Path | str, status_file: Path | str
) -> dict[str, str]:
    """What a replica is told, whichever backend runs it: this mesh's Kafka (resolved now), topic
    prefix and trace endpoint, and where its home and status file are as *it* sees them."""
    return {
        "MESH_BOOTSTRAP_SERVERS": resolve_bootstrap(settings),
        "MESH_HOME": str(home),
        "MESH_TOPIC_PREFIX": settings.topic_prefix,
        "MESH_INSTANCE_STATUS": str(status_file),
        "MESH_OTLP_ENDPOINT": resolve_otlp_endpoint(settings),
    }


class Instance:
    """Replica ``index`` of release ``seq`` of detector ``name``; a ``shadow`` one reads in the
    shadow group and writes its alerts and state to the shadow topics (:mod:`.shadow`)."""

    def __init__(
        self, settings: Settings, name: str, seq: int, index: int, shadow: bool = False
    ) -> None:
        self.settings = settings
        self.detector = name
        self.seq, self.index = seq, index
        self.shadow = shadow
        named = shadow_name if shadow else replica_name
        self.process = LocalProcess(named(name, seq, index), settings.home)
        #: the replica's name, as `mesh status`, logs and the health check show it
        self.name = self.process.name
        self.supervisor_file = supervisor_file(self.process)
        self.report_file = self.process.dir / "instance.json"

    def start(self, release: Release) -> tuple[ProcessInfo, bool]:
        """Start the supervised replica (a no-op when it already runs)."""
        if self.process.running() is None:  # a fresh start must not show the last run's state
            self.report_file.unlink(missing_ok=True)
        command = [
            sys.executable, "-m", "services.detector_runtime", release.path,
            # The replica's name; metrics add host, pid and start time (a restart is a new id).
            "--instance-id", self.process.name,
        ]  # fmt: skip
        if self.shadow:
            command += shadow_arguments(self.settings, self.detector)
        inputs = load_manifest(Path(release.path)).inputs
        env = {**os.environ, **replica_environment(self.settings, self.settings.home,
                                                     self.report_file),
               **detector_login(self.settings, self.detector, inputs)}  # fmt: skip
        return start_supervised(self.process, command, env, child_status=self.report_file)

    def stop(self) -> ProcessInfo | None:
        """SIGTERM the supervisor: the runtime finishes its batch, commits and leaves the group."""
        return self.process.stop()

    def running(self) -> bool:
        return self.process.running() is not None

    def view(self) -> InstanceView:
        running = self.process.running() is not None
        supervisor = read_json(self.supervisor_file) or {}
        pid = supervisor.get("child_pid") if running else None
        return InstanceView(
            process=self.process.name,
            index=self.index,
            seq=self.seq,
            supervisor=supervisor.get("state") if running else None,
            pid=pid,
            child_started=supervisor.get("child_started"),
            restarts=int(supervisor.get("restarts", 0)),
            last_exit=supervisor.get("last_exit"),
            report=read_json(self.report_file) or {},
            usage=process_usage(pid) if pid else None,
        )


def replicas(settings: Settings, name: str, seq: int, count: int) -> list[Instance]:
    """The ``count`` replicas of release ``seq`` of ``name`` as local processes."""
    return [Instance(settings, name, seq, i) for i in range(count)]


def running_instances(settings: Settings, name: str) -> list[Instance]:
    """Every replica of ``name`` that runs now, whatever its release (leftovers included)."""
    pattern = re.compile(rf"detector-{re.escape(name)}-r(\d+)-(\d+)")
    found = []
    for folder in sorted(Path(settings.home).glob(f"detector-{name}-r*-*")):
        match = pattern.fullmatch(folder.name)
        if match:
            candidate = Instance(settings, name, int(match[1]), int(match[2]))
            if candidate.process.running() is not None:
                found.append(candidate)
    return found
