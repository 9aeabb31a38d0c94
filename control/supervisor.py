"""Keep one service instance alive: restart it with backoff when it dies, say why it died.

``python -m control.supervisor --state FILE [--child-status FILE] -- COMMAND...``

Seed 002's worst hour was a stream application whose threads had all died while its process
looked healthy. Here every instance runs under its own small supervisor (one per instance, so
restarting one never touches another):

* a child that exits with a non-zero code or is killed by a signal is restarted after a backoff
  that doubles from ``--backoff`` up to ``--max-backoff`` seconds, and resets once a child has run
  ``--stable-after`` seconds;
* a child that exits 0 stopped on request (the runtime does that on SIGTERM): the supervisor
  stops too;
* SIGTERM/SIGINT to the supervisor is passed to the child, which gets ``--stop-timeout`` seconds
  to finish its batch before SIGKILL;
* if the supervisor itself is killed, the kernel sends the child SIGTERM (PR_SET_PDEATHSIG), so
  no orphan keeps consuming;
* a full or read-only disk under MESH_HOME (its state file and its log live there) does not stop
  it: it goes on restarting the service, which resumes once the disk takes writes again (chaos
  case 13 found a supervisor that died of its own ENOSPC, leaving the service down for good).

The state file (JSON, replaced atomically) says what a reader needs for `mesh status`: the
child's pid and start, the restart count, ``running``/``backoff``/``stopped``, and the last exit
with its reason. The reason is the child's own ``last_error`` from ``--child-status`` when it
wrote one (the detector runtime does), else the exit code or signal.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from shared.disk_space import DiskSpace, disk_space
from shared.json_files import read_json, write_json_atomic

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the supervisor dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def describe_exit(code: int) -> str:
    """``exit code 3`` or ``killed by SIGKILL`` for a Popen return code."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def backoff_seconds(consecutive_failures: int, base: float, ceiling: float) -> float:
    """Seconds to wait before restart number ``consecutive_failures`` (1, 2, ...)."""
    return float(min(ceiling, base * 2 ** max(0, consecutive_failures - 1)))


def wait_exit(child: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """The child's exit code once it has exited, waiting up to ``timeout_s``; None if it runs on.

    The wait sleeps in the kernel until the child exits or the time is up (its pidfd in
    ``select``). ``Popen.wait(timeout)`` instead polls ``waitpid`` on a timer, up to every 50 ms:
    a mesh's eight idle supervisors spent ~2 ms of CPU a second each doing that (issue 29's idle
    aim). Where there is no pidfd (not Linux 5.3 or newer) it is ``Popen.wait`` after all."""
    code = child.poll()
    if code is not None:
        return code
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        try:
            return child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None
    try:
        select.select([pidfd], [], [], timeout_s)
    finally:
        os.close(pidfd)
    return child.poll()


class Supervisor:
    def __init__(self, args: argparse.Namespace) -> None:
        self.command: list[str] = args.command
        self.state_file = Path(args.state)
        self.child_status = Path(args.child_status) if args.child_status else None
        self.base, self.ceiling = args.backoff, args.max_backoff
        self.stable_after, self.stop_timeout = args.stable_after, args.stop_timeout
        self.stopping = False
        self.state_unwritable = False
        self.last_write_try = 0.0
        #: The last time this child's run met MESH_HOME taking no writes (full, read-only).
        self.disk_fault_seen: DiskSpace | None = None
        self.child: subprocess.Popen[bytes] | None = None
        self.state: dict[str, Any] = {
            "state": "starting",
            "restarts": 0,
            "child_pid": None,
            "child_started": None,
            "last_exit": None,
            "last_exit_at": None,
            "next_start_at": None,
        }

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)

    def run(self) -> int:
        consecutive = 0
        while not self.stopping:
            started = time.time()
            self._start_child(started)
            code = self._wait_child()
            if self.stopping or code == 0:
                break
            ran = time.time() - started
            consecutive = 1 if ran >= self.stable_after else consecutive + 1
            delay = backoff_seconds(consecutive, self.base, self.ceiling)
            reason = self._reason(code, started)
            self._log(
                f"child pid {self.child.pid if self.child else '?'} died ({reason}) after "
                f"{ran:.1f} s; restart {self.state['restarts'] + 1} in {delay:.0f} s"
            )
            self._update(
                state="backoff",
                child_pid=None,
                last_exit=reason,
                last_exit_at=time.time(),
                next_start_at=time.time() + delay,
            )
            self._sleep(delay)
            if not self.stopping:
                self.state["restarts"] += 1
        self._update(state="stopped", child_pid=None, next_start_at=None)
        return 0

    def _start_child(self, started: float) -> None:
        self.child = subprocess.Popen(self.command, preexec_fn=_die_with_parent)
        self.disk_fault_seen = None
        self._watch_disk()
        self._update(state="running", child_pid=self.child.pid, child_started=started)
        self._log(f"started pid {self.child.pid}: {' '.join(self.command)}")

    def _wait_child(self) -> int:
        """Wait for the child; after a stop request give it ``stop_timeout`` s, then SIGKILL.
        Wakes once a second meanwhile, for the stop deadline and a state still to write."""
        assert self.child is not None
        deadline = None
        while True:
            if self.stopping and deadline is None:
                deadline = time.monotonic() + self.stop_timeout
            code = wait_exit(self.child, 1.0)
            if code is not None:
                return code
            self._watch_disk()
            self._write_again()
            if deadline is not None and time.monotonic() > deadline:
                self._log(f"child pid {self.child.pid} ignored SIGTERM: SIGKILL")
                self.child.kill()

    def _reason(self, code: int, started: float) -> str:
        """The child's own last error if it wrote one during this run, else how it exited; and
        when MESH_HOME takes no writes, or took none during this run, that (the child could not
        write its error there). A job that met a full disk may die only after the disk came
        back (a JVM takes seconds to exit): its reason still names the disk."""
        how = describe_exit(code)
        status = read_json(self.child_status) if self.child_status else None
        if status and status.get("last_error") and float(status.get("updated", 0)) >= started:
            how = f"{how}: {status['last_error']}"
        try:
            space = disk_space(self.state_file.parent)
        except OSError:  # the disk is gone altogether: the exit says enough
            return how
        if space.blocks_writes:
            return f"{how} (its disk {space.text()})"
        if self.disk_fault_seen is not None:
            return f"{how} (its disk during this run: {self.disk_fault_seen.text()})"
        return how

    def _watch_disk(self) -> None:
        """Remember whether MESH_HOME takes no writes now, for this run's exit reason."""
        with contextlib.suppress(OSError):
            space = disk_space(self.state_file.parent)
            if space.blocks_writes:
                self.disk_fault_seen = space

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(0.1)
            self._write_again()

    def _write_again(self) -> None:
        """A state that could not be written (MESH_HOME full or read-only) is written as soon as
        the disk takes it again, not only at the next change: a child restarted into a healthy
        disk may run for days, and `mesh status` must not show the state from before the fault
        (its last exit, naming the disk) meanwhile. At most one try a second."""
        now = time.monotonic()
        if self.state_unwritable and now - self.last_write_try >= 1.0:
            self._update()

    def _update(self, **changes: Any) -> None:
        """Keep the state and write it; a full or read-only disk under MESH_HOME must not stop
        the supervising (it is written again each second until it is taken: _write_again)."""
        self.state.update(changes)
        self.last_write_try = time.monotonic()
        try:
            write_json_atomic(self.state_file, {**self.state, "supervisor_pid": os.getpid()})
        except OSError as error:
            if not self.state_unwritable:
                self._log(f"cannot write {self.state_file}: {error}; supervising on")
            self.state_unwritable = True
        else:
            self.state_unwritable = False

    @staticmethod
    def _log(message: str) -> None:
        """One line on stderr (the service's log, under MESH_HOME): dropped when that disk is
        full or read-only, as the supervisor must live on to restart the service once it is
        not."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with contextlib.suppress(OSError):
            print(f"{stamp} supervisor: {message}", file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m control.supervisor", description=__doc__)
    p.add_argument("--state", required=True, help="JSON file the supervisor keeps up to date")
    p.add_argument("--child-status", help="JSON file where the child writes its last_error")
    p.add_argument("--backoff", type=float, default=1.0, help="first restart delay (1 s)")
    p.add_argument("--max-backoff", type=float, default=30.0, help="longest delay (30 s)")
    p.add_argument("--stable-after", type=float, default=60.0, help="run time that resets backoff")
    p.add_argument("--stop-timeout", type=float, default=50.0, help="SIGTERM to SIGKILL (50 s)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser().error("give the command to supervise after --")
    supervisor = Supervisor(args)
    signal.signal(signal.SIGTERM, supervisor.on_signal)
    signal.signal(signal.SIGINT, supervisor.on_signal)
    return supervisor.run()


if __name__ == "__main__":
    raise SystemExit(main())
