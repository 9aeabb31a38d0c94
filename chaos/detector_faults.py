"""Cases 1, 2 and 15: detector instances killed with SIGKILL under steady load.

Two instances of the echo detector (one alert per record) share a private mesh's
``records.transactions`` in one group, fed by the smoke driver; each is a static group member
under its ``--instance-id`` (shared/kafka/static_membership.py). **detector_kill**: one instance
is killed mid-run and stays dead; the survivor takes its partitions once the group notices (a
6 s session timeout). **detector_kill_cycles**: three times, one instance (alternating) is killed
and a new one (another name) started while the other runs. **detector_restart_in_place**: the
same, but the killed instance comes back under its own name, as a supervisor restarts it: it
takes its partitions back without waiting for the dead member's session (issue 34).

Guarantees checked: no acknowledged record lost; no reordering within a key; committed offsets
never go backwards; duplicates at most what one kill can replay per kill (``REPLAY``: the
records processed since the last commit, fewer than a batch, and the batch in progress).
Recovery: from a kill until every record the broker had acknowledged at that moment is alerted.
"""

from __future__ import annotations

import time
from pathlib import Path

from chaos.case_mesh import REPLAY, CaseMesh
from chaos.case_run import CaseRun, Load
from chaos.report import CaseResult
from shared.settings import Settings


def detector_kill(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _run(settings, work, Load.of(short), cycles=1, restart=False, name="detector_kill")


def detector_kill_cycles(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _run(settings, work, Load.of(short), cycles=3, restart=True,
                name="detector_kill_cycles")  # fmt: skip


def detector_restart_in_place(settings: Settings, work: Path, short: bool) -> CaseResult:
    return _run(settings, work, Load.of(short), cycles=3, restart=True, same_name=True,
                name="detector_restart_in_place")  # fmt: skip


def _run(
    settings: Settings,
    work: Path,
    load: Load,
    *,
    cycles: int,
    restart: bool,
    name: str,
    same_name: bool = False,
) -> CaseResult:
    recoveries: list[float | None] = []
    with CaseRun(CaseMesh.create(settings, work), load) as run:
        labels = ["a0", "b0"]
        for label in labels:
            run.instance(label)
        run.start_load()
        mid_run = True
        for cycle in range(cycles):
            run.sleep_until(0.25 + 0.2 * cycle)  # faults at 25 %, 45 %, 65 % of the run
            victim = cycle % 2
            before = set(run.driver.acknowledged)
            mid_run &= run.output_so_far() and run.driver.running
            run.instances[labels[victim]].kill()
            killed_at = time.monotonic()
            run.notes.append(
                f"kill {cycle + 1}: instance {labels[victim]} SIGKILLed at "
                f"{run.elapsed():.1f} s, {len(before)} records acknowledged"
            )
            if restart:
                if not same_name:
                    labels[victim] = f"{'ab'[victim]}{cycle + 1}"
                run.instance(labels[victim])
            recoveries.append(run.tap.wait_for(before, killed_at))
        mid_run &= run.finish()
    known = [r for r in recoveries if r is not None]
    return run.result(name, recover_s=max(known) if known and len(known) == len(recoveries)
                      else None, mid_run=mid_run,
                      duplicates_allowed=REPLAY * cycles)  # fmt: skip
