"""One case's private corner of a broker: its own topic prefix (so cases never read each other's
records), the declared topics created, and detector instances started on it as real processes.

Every case builds one, so a case says only what its fault is and what it checks.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from control.cli.topics import apply_declared
from shared.settings import Settings
from shared.topic_names import TopicNames
from testkit.detector_runs import DetectorProcess

ECHO = Path(__file__).parent / "echo"
#: Records per batch of each instance.
BATCH = 500
#: The most records one SIGKILL can make an instance process again: those it processed since its
#: last commit, fewer than a batch (it commits every interval and once a batch's worth waits),
#: and the batch it was in.
REPLAY = 2 * BATCH


@dataclass(frozen=True)
class CaseMesh:
    settings: Settings
    prefix: str
    names: TopicNames
    work: Path
    #: the smoke driver's run id: the ids of this case's records carry it
    run: str

    @classmethod
    def create(cls, settings: Settings, work: Path) -> CaseMesh:
        """A fresh prefix on ``settings``' broker, with every declared topic created."""

        work.mkdir(parents=True, exist_ok=True)
        prefix = f"chaos-{uuid.uuid4().hex[:8]}."
        mesh = replace(settings, home=work / "home", topic_prefix=prefix)
        with contextlib.redirect_stdout(io.StringIO()):  # one line per topic: not the case's
            apply_declared(mesh)
        return cls(mesh, prefix, TopicNames.of(mesh), work, uuid.uuid4().hex[:8])

    @property
    def source(self) -> str:
        """The topic the smoke driver feeds and the detectors read."""
        return self.names.records("transactions")

    def instance(
        self,
        label: str,
        detector: Path = ECHO,
        extra: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> DetectorProcess:
        """A detector instance (a ``python -m services.detector_runtime`` process) in the
        detector's usual group, quick to notice a dead member (6 s session timeout)."""
        args = [
            "--topic-prefix", self.prefix, "--batch-size", str(BATCH), "--log-interval", "1",
            "--instance-id", f"{detector.name}-{label}",
            "--consumer-config", "session.timeout.ms=6000",
            "--consumer-config", "heartbeat.interval.ms=1000", *extra,
        ]  # fmt: skip
        log = self.work / f"{detector.name}-{label}.log"
        told = {"MESH_HOME": str(self.settings.home), **(env or {})}
        return DetectorProcess(self.settings, detector, args, log, env=told)


def stop(instance: DetectorProcess, timeout_s: float = 30.0) -> int | None:
    """SIGTERM and wait (a killed instance is gone already: None); one that does not stop in
    ``timeout_s`` is killed. Returns the exit code of a graceful stop."""
    if instance.process.poll() is not None:
        return None
    try:
        return instance.terminate(timeout_s)
    except subprocess.TimeoutExpired:
        instance.process.kill()
        instance.process.wait(10)
        return None
