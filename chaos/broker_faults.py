"""Case 4: the broker killed with SIGKILL under load, and started again on its data.

The case runs on a broker of its own (its faults must not touch the suite's broker or a mesh you
run): two echo instances share the smoke driver's load; at 40 % of the run the broker is killed
(no controlled shutdown), stays away for OUTAGE_S, and is started again on the same port and data
folder. Nobody restarts the detector instances, the driver or the taps: they must resume by
themselves. Every record acknowledged before the kill (and after the restart) must be alerted;
the producer holds what it could not send and sends it once the broker is back.

Duplicates allowed: one uncommitted batch per instance (a commit the dead broker never answered
means the batch is read again). Recovery: from the restart until every record acknowledged by
a second after it (what the producer held through the outage) is alerted, printed with the
outage.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from pathlib import Path

from chaos.case_mesh import REPLAY, CaseMesh
from chaos.case_run import CaseRun, Load
from chaos.report import CaseResult
from hosting.servers.broker import LocalBroker
from hosting.servers.ports import ephemeral_port
from shared.pids import wait_gone
from shared.settings import Settings


def outage_s(short: bool) -> float:
    """How long the broker stays dead: longer than the instances' session timeout (6 s), so the
    group really is rebuilt after the restart."""
    return 8.0 if short else 15.0


def broker_kill(settings: Settings, work: Path, short: bool) -> CaseResult:
    base = replace(settings, home=work / "broker", bootstrap_servers="",
                   broker_port=ephemeral_port("127.0.0.1"))  # fmt: skip
    broker = LocalBroker(base)
    info, _ = broker.ensure_started()
    failures: list[str] = []
    try:
        private = replace(settings, bootstrap_servers=info.bootstrap)
        with CaseRun(CaseMesh.create(private, work), Load.of(short)) as run:
            run.instance("a")
            run.instance("b")
            run.start_load()
            run.sleep_until(0.4)
            mid_run = run.output_so_far() and run.driver.running
            before = set(run.driver.acknowledged)
            at = run.elapsed()
            os.kill(info.pid, signal.SIGKILL)
            if not wait_gone(info.pid, 30):
                failures.append("the broker survived SIGKILL")
            time.sleep(outage_s(short))
            restarting = time.monotonic()
            again, restarted = broker.ensure_started()
            back_at = time.monotonic()
            if not restarted or again.port != info.port:
                failures.append(f"the broker came back at {again.bootstrap}, not {info.bootstrap}")
            # The producer sends what it held through the outage as soon as the broker is back:
            # the mesh is whole again when what was acknowledged in the first second is out.
            time.sleep(1.0)
            recover = run.tap.wait_for(set(run.driver.acknowledged) | before, back_at, 180)
            whole = "never" if recover is None else f"{recover:.1f} s after the restart"
            run.notes.append(
                f"broker SIGKILLed at {at:.1f} s with {len(before)} records "
                f"acknowledged, down {outage_s(short):.0f} s, {back_at - restarting:.1f} s to "
                f"start again; whole again {whole}"
            )
            mid_run &= run.finish()
            failures += run.exited()
    finally:
        broker.stop()
    return run.result("broker_kill", recover_s=recover, mid_run=mid_run,
                      duplicates_allowed=2 * REPLAY,
                      failures=failures)  # fmt: skip
