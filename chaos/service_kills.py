"""The services' share of a mixed-fault run (chaos case 16's short form, issue 48): a detector
replica, ingest and the notifier each SIGKILLed once (with everything under it: a Spark job's
JVM too, :func:`testkit.service_kill.kill_service`), at times drawn from a seeded random share of
the feed, while the broker faults run in the case's own thread. Their supervisors must restart
each exactly once.

What the verdict needs of each kill is noted as it happens: when (the figures' "flowing again"
after it), whether it was mid-run, and for ingest the routing checkpoint's mark
(:mod:`chaos.replay_scope`): exactly the records a restart may route again, so the duplicates
allowed are those and nothing more. The mark needs the outputs' ends, asked of the cluster while
a broker fault may be on (a hung node leads some of them until it is fenced): asked again for
up to MARK_WITHIN_S, inside the 20 s and more a restarted job takes to route anything.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chaos.cluster_mesh import ClusterMesh
from chaos.replay_scope import KillMark, read_mark
from shared.local_process import LocalProcess
from shared.spark_checkpoint import await_committed
from testkit.service_kill import kill_service

#: The shares of the feed the kills are drawn from: after the mesh has notified (the first
#: planted frauds come within ~15 s) and early enough for the kill to meet records still coming.
EARLIEST, LATEST = 0.2, 0.85
#: How long the ingest kill's mark may take to read.
MARK_WITHIN_S = 15.0
#: How long the ingest kill waits for routing's first commit (a checkpoint interval and more).
COMMIT_WITHIN_S = 90.0


@dataclass(frozen=True)
class ServiceKill:
    what: str
    #: when, as a share of the feed
    at: float
    #: the supervised process to kill, among the case mesh's (a seeded choice for a replica)
    pick: Callable[[list[str]], str]


def mixed_kills(seed: int) -> list[ServiceKill]:
    """A detector replica, ingest and the notifier, each at a seeded random share of the feed."""
    draw = random.Random(seed)

    def a_replica(names: list[str]) -> str:
        return draw.choice([name for name in names if name.startswith("detector-")])

    replica = ServiceKill("a detector replica", draw.uniform(EARLIEST, LATEST), a_replica)
    ingest = ServiceKill("ingest", draw.uniform(EARLIEST, LATEST), lambda _: "ingest")
    notifier = ServiceKill("the notifier", draw.uniform(EARLIEST, LATEST), lambda _: "notifier")
    return sorted([replica, ingest, notifier], key=lambda kill: kill.at)


@dataclass
class KillLog:
    """What the kills did, for the verdict."""

    #: process name -> times killed
    killed: dict[str, int] = field(default_factory=dict)
    #: (what, epoch ms) of each kill
    at_ms: list[tuple[str, float]] = field(default_factory=list)
    ingest_marks: list[KillMark] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    mid_run: bool = True


class ServiceKiller(threading.Thread):
    """Runs ``kills`` at their shares of a ``feed_s``-second feed begun at ``started``
    (monotonic), beside the case's broker faults."""

    def __init__(
        self,
        mesh: ClusterMesh,
        bootstrap: str,
        kills: list[ServiceKill],
        feed: tuple[float, float, subprocess.Popen],
    ) -> None:
        super().__init__(name="service-kills", daemon=True)
        self.mesh, self.bootstrap, self.kills = mesh, bootstrap, kills
        self.started, self.feed_s, self.producer = feed
        self.log = KillLog()
        self._stopped = threading.Event()

    def stop(self) -> None:
        """No more kills (the case ends early: a fault failed); waits for one under way."""
        self._stopped.set()
        self.join()

    def run(self) -> None:
        for kill in self.kills:
            if self._stopped.wait(max(self.started + self.feed_s * kill.at - time.monotonic(), 0)):
                return
            try:
                self._kill(kill)
            except Exception as error:  # noted, so the case fails with it instead of hanging
                self.log.failures.append(f"killing {kill.what}: {error!r}")

    def _kill(self, kill: ServiceKill) -> None:
        name = kill.pick(sorted(self.mesh.restarts()))
        self.mesh.await_first_delivery(self.producer)
        # A kill before routing's first commit would let the restart repeat everything, and
        # the exact bound (only what was routed beyond the committed offsets) check nothing.
        checkpoint = self.mesh.routing_checkpoint()
        if name == "ingest" and not await_committed(checkpoint, COMMIT_WITHIN_S, self._fed):
            self.log.notes.append(f"routing committed no batch in {COMMIT_WITHIN_S:.0f} s: the "
                                  "ingest kill's bound covers all it routed")  # fmt: skip
        self.log.mid_run &= bool(self.mesh.deliveries()) and self.producer.poll() is None
        doomed = kill_service(LocalProcess(name, self.mesh.home))
        at_s, at_ms = time.monotonic() - self.started, time.time() * 1000  # all of it is dead
        if not doomed:
            self.log.failures.append(f"{name} was not running when {kill.what} was to be killed")
            return
        self.log.killed[name] = self.log.killed.get(name, 0) + 1
        self.log.at_ms.append((f"{name} kill", at_ms))
        if name == "ingest":
            self._mark_ingest()
        self.log.notes.append(f"{name} ({kill.what}) SIGKILLed at {at_s:.0f} s of the feed")

    def _fed(self) -> bool:
        """The feed (`mesh produce`) has ended."""
        return self.producer.poll() is not None

    def _mark_ingest(self) -> None:
        checkpoint = self.mesh.routing_checkpoint()
        began = time.monotonic()
        while True:
            try:
                mark = read_mark(checkpoint, lambda: self.mesh.output_ends(self.bootstrap))
            except Exception as error:  # a node hung or lost: its leaderships move in seconds
                if time.monotonic() - began < MARK_WITHIN_S:
                    time.sleep(0.5)
                    continue
                self.log.failures.append(f"the ingest kill's mark could not be read within "
                                         f"{MARK_WITHIN_S:.0f} s: {error!r}")  # fmt: skip
                return
            self.log.ingest_marks.append(mark)
            return
