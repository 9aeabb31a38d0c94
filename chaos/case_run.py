"""The frame every detector case shares: the smoke driver feeding the case's mesh, detector
instances, the taps on the alerts (and dead letters), and the committed-offset watch; then the
drain at the end and the figures. A case adds only its fault and its own checks.

Use as a context manager: on the way out everything the run started is stopped (instances with
SIGTERM, then SIGKILL after 30 s), whether the case finished or failed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.case_mesh import ECHO, CaseMesh, stop
from chaos.offsets import OffsetWatch
from chaos.report import CaseResult
from chaos.smoke import SmokeDriver, check
from chaos.tap import AlertTap, DeadLetterTap
from shared.kafka.security import client_security
from testkit.detector_runs import DetectorProcess

#: How long the end of a run waits for every acknowledged record to come out.
DRAIN_S = 180.0
#: And then a little longer, for duplicates still on their way.
SETTLE_S = 3.0


@dataclass(frozen=True)
class Load:
    """How long and how fast a case feeds (its faults come at shares of the run)."""

    seconds: float
    rate: float

    @classmethod
    def of(cls, short: bool) -> Load:
        return cls(15.0, 800.0) if short else cls(48.0, 2500.0)


class CaseRun:
    def __init__(
        self, mesh: CaseMesh, load: Load, detector: Path = ECHO, **driver_options: Any
    ) -> None:
        self.mesh, self.load, self.detector = mesh, load, detector
        self.group = mesh.names.detector_group(detector.name)
        settings = mesh.settings
        self.tap = AlertTap(settings, mesh.names.alerts)
        self.dead_letters = DeadLetterTap(settings, mesh.names.detectors_dlq)
        self.watch = OffsetWatch(settings.bootstrap_servers, self.group, [mesh.source],
                                 client_security(settings))  # fmt: skip
        self.driver = SmokeDriver(settings, mesh.source, mesh.run, load.rate, **driver_options)
        self.instances: dict[str, DetectorProcess] = {}
        self.notes: list[str] = []
        self.started = 0.0
        #: when the driver stopped (time.monotonic()), set by finish()
        self.stopped_at = 0.0

    def __enter__(self) -> CaseRun:
        self.tap.start()
        self.dead_letters.start()
        self.watch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.driver.stop()
        for instance in self.instances.values():
            stop(instance)
        self.watch.stop()
        self.tap.stop()
        self.dead_letters.stop()

    def instance(
        self, label: str, extra: list[str] | None = None, env: dict[str, str] | None = None
    ) -> DetectorProcess:
        """Start an instance of the case's detector (a later one with the same label replaces
        the entry, which the caller has stopped or killed)."""
        self.instances[label] = self.mesh.instance(label, self.detector, extra or [], env)
        return self.instances[label]

    def exited(self) -> list[str]:
        """One line per instance that has exited on its own: label, exit code and the last line
        of its log that says why (what a case reports when an instance should have lived)."""
        found = []
        for label, instance in self.instances.items():
            code = instance.process.poll()
            if code is not None and code >= 0:  # a negative code: killed by the case's signal
                lines = [line for line in instance.log_text().splitlines() if line.strip()]
                errors = [line for line in lines if "error" in line.lower()]
                why = (errors or lines or [""])[-1]
                found.append(f"instance {label} exited with code {code}: {why.strip()[:300]}")
        return found

    def start_load(self, assigned_timeout_s: float = 60.0) -> None:
        """Once every instance has partitions, start the driver; the run's clock starts."""
        for instance in self.instances.values():
            instance.wait_for_log(f"assigned {self.mesh.source}[", assigned_timeout_s)
        self.driver.start()
        self.started = time.monotonic()

    def sleep_until(self, share: float) -> None:
        """Until ``share`` of the run's time has passed."""
        time.sleep(max(self.started + self.load.seconds * share - time.monotonic(), 0))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def output_so_far(self) -> bool:
        """Something came out already (a fault before this tests nothing)."""
        return self.tap.count() > 0

    def finish(self) -> bool:
        """The end of the load, then the drain: until every acknowledged record is out (good
        ones alerted, bad ones dead-lettered) or DRAIN_S passed. True if the driver was still
        sending to the end (a fault after its last record tests nothing)."""
        self.sleep_until(1.0)
        sending = self.driver.running and self.driver.sent > 0
        self.driver.stop()
        self.stopped_at = time.monotonic()
        driver = self.driver
        bad = driver.acknowledged & (driver.marked | driver.poisoned)
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            if self.tap.has_all(driver.acknowledged - bad) and self.dead_letters.has_all(bad):
                break
            time.sleep(0.2)
        time.sleep(SETTLE_S)
        return sending

    def result(
        self,
        name: str,
        *,
        recover_s: float | None,
        mid_run: bool,
        duplicates_allowed: int,
        failures: list[str] | None = None,
    ) -> CaseResult:
        figures = check(self.driver, self.tap.in_partition_order(),
                        [ident for _, ident in self.dead_letters.in_partition_order()])  # fmt: skip
        self.notes.append(f"offsets sampled {self.watch.samples} times; steps back: "
                          f"{self.watch.regressions[:3]}")  # fmt: skip
        return CaseResult(name, figures, recover_s, mid_run, duplicates_allowed,
                          len(self.watch.regressions), self.notes, failures or [])  # fmt: skip
