"""Case 13: MESH_HOME takes no writes under the running ingest job (full; the long form then
read-only too), and the mesh comes back by itself, with nothing lost and no corrupt state, once
it takes them again.

The job runs as `mesh up` runs it (supervised, micro-batch) on the frame of
:mod:`chaos.ingest_run`, with its MESH_HOME on a tmpfs of its own (:mod:`chaos.mounts`, so the
fault touches nothing else; root only: without root the case is skipped and says so). Its
checkpoints, its supervisor's state and its log are all there, as in production.

For each fault: raw records arrive while the disk takes no writes, so the job's next batch must
write its checkpoint and cannot. Checked, in order:

* the fault really happened mid-run: records were routed before it and more were still coming,
  and the job died of it;
* `mesh status` said what is wrong (``home FULL`` or ``home READONLY``), since no service can
  write that line itself;
* the disk is given back (the filler deleted, the read-only mount removed) and nobody runs
  `mesh up`: the supervisor restarts the job, which resumes on its checkpoint; *recovered in*
  is from the disk given back until routing grew again;
* the supervisor's last exit names the disk (``exit code 1 (its disk ...: no space left ...)``);
* every raw record was routed at least once, window counts exact; what was replayed is at most
  the batch the fault interrupted. Any partial checkpoint write the restart had to clear is
  noted (the job logs it).
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chaos.ingest_run import BATCH, IngestMesh, RawFeed, routing_verdict
from chaos.mounts import MountRefused, fill, make_read_only, mount_tmpfs, top_up, unmount
from chaos.report import CaseResult
from control.supervised_service import supervised_child
from shared.disk_space import disk_space
from shared.service_files import MICRO_BATCH
from shared.settings import Settings
from testkit.service_kill import halt_service

NAME = "home_unwritable"


@dataclass(frozen=True)
class Fault:
    name: str
    #: what `mesh status` must say of MESH_HOME meanwhile, and the supervisor's exit reason
    status_word: str
    reason_words: str
    #: make ``home`` take no writes; returns what keeps it so (called every 0.2 s while the fault
    #: lasts) and what gives it back
    apply: Callable[[Path], tuple[Callable[[], None], Callable[[], None]]]


def _full(home: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    """Full, and kept full: the dying job's JVM deletes ~10 MB of temporary files, and a disk
    that had room again would let the restarts meet a different fault (or none)."""
    filler = fill(home)
    return (lambda: top_up(filler)), (lambda: filler.unlink())


def _read_only(home: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    make_read_only(home)
    return (lambda: None), (lambda: unmount(home))


FULL = Fault("full", "FULL", "no space left", _full)
READ_ONLY = Fault("read-only", "READONLY", "read-only", _read_only)


def home_unwritable(settings: Settings, work: Path, short: bool) -> CaseResult:
    if os.geteuid() != 0:
        return CaseResult.skip(NAME, "mounting the case's own MESH_HOME (a tmpfs) needs root")
    home = work / "home"
    try:
        mount_tmpfs(home)
    except MountRefused as refused:
        return CaseResult.skip(NAME, f"the kernel refused the case's tmpfs: {refused}")
    try:
        return _run(settings, home, work, [FULL] if short else [FULL, READ_ONLY], short)
    finally:
        unmount(home)


@dataclass
class _Outcome:
    died: bool
    status_line: str
    #: routed before the fault, and when the job had died of it (with what was delivered then)
    routed_before: int
    routed_at_death: int
    delivered_at_death: int
    recover_s: float | None


def _run(
    settings: Settings, home: Path, work: Path, faults: list[Fault], short: bool
) -> CaseResult:
    mesh = IngestMesh.create(settings, work, MICRO_BATCH)
    if mesh.settings.home != home or not os.path.ismount(home):  # never fill another disk
        raise RuntimeError(f"the job's MESH_HOME {mesh.settings.home} is not the case's tmpfs")
    feed = RawFeed(mesh, rate=0, slice_s=5)
    failures: list[str] = []
    notes: list[str] = []
    outcomes: list[_Outcome] = []
    try:
        feed.send_slice()
        mesh.start()
        mesh.wait_routed(feed.delivered, 240, "the first records routed")
        for fault in faults:
            outcome = _unwritable(mesh, feed, fault, hold_s=5 if short else 15)
            outcomes.append(outcome)
            failures += _judge(mesh, fault, outcome)
            notes.append(f"{fault.name}: {outcome.routed_before} routed before; job died: "
                         f"{outcome.died}; `mesh status`: {outcome.status_line!r}")  # fmt: skip
        mesh.wait_quiet()
        windows = mesh.wait_windows(feed.delivered)
    finally:
        feed.stop()
        halt_service(mesh.process)
    log = mesh.process.log_file.read_text(errors="replace").splitlines()
    cleared = [line for line in log if "died while writing its checkpoint" in line]
    notes.append(f"partial checkpoint writes the restarts cleared: {len(cleared)}; windows "
                 f"{dict(windows)}")  # fmt: skip

    figures, breaches, _ = routing_verdict(mesh, feed, windows)
    failures += breaches
    # Mid-run: records were routed before the fault, and some were waiting when it struck.
    mid_run = bool(outcomes) and all(
        o.died and o.routed_before > 0 and o.routed_at_death < o.delivered_at_death
        for o in outcomes
    )
    recovered = [o.recover_s for o in outcomes]
    recover_s = None if None in recovered else max(r for r in recovered if r is not None)
    # A batch the fault interrupted is routed again: one BATCH per fault at most.
    allowed = BATCH * len(faults)
    return CaseResult(NAME, figures, recover_s, mid_run, allowed, 0, notes, failures)


def _unwritable(mesh: IngestMesh, feed: RawFeed, fault: Fault, hold_s: float) -> _Outcome:
    """Take writes away from MESH_HOME while records arrive; give them back once the job died
    of it (and ``hold_s`` more, so restarts meet the fault too); then wait for the recovery."""
    home = mesh.settings.home
    child = supervised_child(mesh.process)
    if child is None or child.pid is None:
        raise RuntimeError(f"no ingest job runs before the {fault.name} fault")
    routed_before = mesh.routed()
    keep, give_back = fault.apply(home)
    try:
        if not disk_space(home).blocks_writes:
            raise RuntimeError(f"the {fault.name} fault did not take: {disk_space(home).text()}")
        feed.send_slice()  # the job's next batch must write its checkpoint
        died = _holding(keep, 120, until=lambda: mesh.process.wait_gone(child.pid, 0.2))
        routed_at_death, delivered_at_death = mesh.routed(), feed.delivered
        # The job's JVM frees ~10 MB of temporary files as it dies, after the driver is gone:
        # the disk is kept full while `mesh status` runs, or it may read the space freed.
        asked: concurrent.futures.Future[str] = _ASK.submit(_status_home_line, mesh.settings)
        _holding(keep, 120, until=lambda: not concurrent.futures.wait([asked], 0.2).not_done)
        status_line = asked.result()
        _holding(keep, hold_s)
        routed_in_fault = mesh.routed()
    finally:
        give_back()
    given_back = time.monotonic()
    recover_s = None
    deadline = given_back + 300
    while time.monotonic() < deadline:
        if mesh.routed() > routed_in_fault:
            recover_s = time.monotonic() - given_back
            break
        time.sleep(0.5)
    mesh.wait_routed(feed.delivered, 300, f"routing after the {fault.name} disk came back")
    return _Outcome(died, status_line, routed_before, routed_at_death, delivered_at_death,
                    recover_s)  # fmt: skip


#: Where `mesh status` runs while the fault is kept (:func:`_unwritable`).
_ASK = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="status")


def _holding(
    keep: Callable[[], None], seconds: float, until: Callable[[], bool] | None = None
) -> bool:
    """Keep the fault for ``seconds``, ``keep`` every ~0.2 s; with ``until`` (which takes those
    0.2 s itself) stop as soon as it holds. Whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        keep()
        if until is None:
            time.sleep(0.2)
        elif until():
            return True
    return False


def _judge(mesh: IngestMesh, fault: Fault, outcome: _Outcome) -> list[str]:
    found = []
    if not outcome.died:
        found.append(f"the job lived through a {fault.name} MESH_HOME for 120 s")
    if not outcome.status_line.startswith(f"home     {fault.status_word}"):
        found.append(f"`mesh status` said {outcome.status_line!r} of a {fault.name} MESH_HOME")
    if outcome.recover_s is None:
        found.append(f"routing did not resume within 300 s of the {fault.name} disk coming back")
    child = supervised_child(mesh.process)
    last_exit = (child.last_exit if child else None) or ""
    if fault.reason_words not in last_exit:
        found.append(f"the supervisor's last exit {last_exit!r} does not name the {fault.name} "
                     "disk")  # fmt: skip
    return found


def _status_home_line(settings: Settings) -> str:
    """The ``home`` line of `mesh status` run as a user would, on the case's MESH_HOME."""
    env = {**os.environ, "MESH_HOME": str(settings.home),
           "MESH_BOOTSTRAP_SERVERS": settings.bootstrap_servers}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "control.cli.main", "status"], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("home ")]
    return lines[0] if lines else f"(no home line; exit {done.returncode}: {done.stderr[-200:]})"
