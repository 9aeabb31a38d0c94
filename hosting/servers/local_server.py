"""What every local server of the mesh does the same way: start once, wait until ready, stop.

A local server (InfluxDB, the trace backend) is an ordinary :class:`~shared.local_process.
LocalProcess` with its files under ``$MESH_HOME/<name>/``. Starting is idempotent and safe from
two processes at once: the first caller chooses the ports, writes the config and publishes where
the server listens (the file :mod:`shared.endpoints` reads), all under one lock; every caller then
waits until the server answers. A server that dies while starting, or does not answer in time, is
reported with the last lines of its log, and stopped again by the caller that started it.

A subclass says only what differs: how to launch it (:meth:`_launch_plan`), how to tell it is
ready (:meth:`_ready`), and where it publishes its address.
"""

from __future__ import annotations

import os
import time
from typing import ClassVar, Generic, TypeVar

from shared.errors import MeshError
from shared.file_lock import folder_lock
from shared.local_process import LocalProcess
from shared.settings import Settings

InfoT = TypeVar("InfoT")

#: Seconds between two readiness probes.
POLL_S = 0.1
#: Starts tried when a port chosen for the server was taken before it listened.
PORT_RACE_ATTEMPTS = 3
#: How a taken port reads in a log (Java's BindException, Go's and Python's bind errors).
ADDRESS_IN_USE = "address already in use"


class LocalServer(Generic[InfoT]):
    """Start, find and stop one local server; ``InfoT`` is where it listens."""

    #: The process (and folder under MESH_HOME), and the program's name in messages (a server
    #: with several processes, the brokers of a local cluster, names each instance).
    name: str
    program: str
    #: What goes wrong is raised as this.
    error: ClassVar[type[MeshError]]
    #: Environment variables the program reads as configuration: not passed on to it.
    foreign_env: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Settings, *, start_timeout_s: float = 30.0) -> None:
        self.settings = settings
        self.start_timeout_s = start_timeout_s
        self.process = LocalProcess(self.name, settings.home)
        self.dir = self.process.dir

    # what a subclass says --------------------------------------------------------------------
    def _launch_plan(self) -> tuple[list[str], InfoT]:
        """Choose ports, write the config; the command to run and where it will listen."""
        raise NotImplementedError

    def _ready(self, info: InfoT) -> bool:
        """One probe: does the server answer as a client will use it?"""
        raise NotImplementedError

    def _describe(self, info: InfoT) -> str:
        """Where it was asked, for the message when it does not answer."""
        raise NotImplementedError

    def _published(self) -> InfoT | None:
        """Where the running server listens, as the services read it (shared.endpoints)."""
        raise NotImplementedError

    def _publish(self, info: InfoT) -> None:
        raise NotImplementedError

    def _unpublish(self) -> None:
        raise NotImplementedError

    def _announce(self, info: InfoT) -> None:
        """Once it answers: anything published only for a ready server (default: nothing)."""

    def _timeout_hint(self) -> str:
        """What to change when it does not answer in time, for the message ("" if nothing)."""
        return ""

    # the protocol ----------------------------------------------------------------------------
    def running(self) -> InfoT | None:
        """Where the server listens if its process is alive (it may still be starting)."""
        return self._published()

    def start(self) -> InfoT:
        """Start unless running, wait until it answers; where it listens."""
        return self.ensure_started()[0]

    def ensure_started(self) -> tuple[InfoT, bool]:
        """Start unless running, wait until it answers; where it listens, and whether this call
        started it.

        A port is free when it is chosen and bound seconds later, when the program is up; in
        between any process may take it (a client's outgoing connection gets a port from the
        same ephemeral range: a `make test` saw the broker die so). A start that died of a taken
        address is tried again with new ports, up to PORT_RACE_ATTEMPTS times."""
        for attempt in range(1, PORT_RACE_ATTEMPTS + 1):
            log_start = self._log_size()
            info, started = self.launch_unless_running()
            try:
                self.wait_ready(info)
            except BaseException as failure:
                if not started:
                    raise
                again = (isinstance(failure, self.error) and attempt < PORT_RACE_ATTEMPTS
                         and self._lost_a_port(log_start))  # fmt: skip
                self.stop(timeout=5)
                if not again:
                    raise
                continue
            self._announce(info)
            return info, started
        raise AssertionError("unreachable: the last attempt returns or raises")

    def launch_unless_running(self) -> tuple[InfoT, bool]:
        """Under the start lock: where the running server listens, or a new one launched."""
        with folder_lock(self.dir / "starting", self.error):
            info = self.running()
            if info is not None:
                return info, False
            command, info = self._launch_plan()
            self._publish(info)
            env = {k: v for k, v in os.environ.items() if not k.startswith(self.foreign_env)}
            _, started = self.process.start(command, env)
            return self.running() or info, started

    def _log_size(self) -> int:
        try:
            return self.process.log_file.stat().st_size
        except FileNotFoundError:
            return 0

    def _lost_a_port(self, log_start: int) -> bool:
        """What this start wrote to the log (it is appended to across starts) says an address
        it was to listen on was taken."""
        try:
            with self.process.log_file.open("rb") as log:
                log.seek(log_start)
                written = log.read().decode(errors="replace")
        except FileNotFoundError:
            return False
        return ADDRESS_IN_USE in written.lower()

    def stop(self, timeout: float = 30.0) -> InfoT | None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``); where it listened, or None
        if none ran.

        Under the start lock, so a start from another process cannot publish its address in
        between and have it removed here."""
        with folder_lock(self.dir / "starting", self.error):
            info = self.running()
            stopped = self.process.stop(timeout)
            self._unpublish()
        return info if stopped is not None else None

    def tail_log(self, lines: int = 10) -> str:
        return " | ".join(self.process.tail_log(lines)) or "(no log)"

    def wait_ready(self, info: InfoT) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.running() is None:
                raise self.error(
                    f"{self.program} exited while starting; last lines of "
                    f"{self.process.log_file}: {self.tail_log()}"
                )
            if self._ready(info):
                return
            time.sleep(POLL_S)
        raise self.error(
            f"{self.program} did not answer {self._describe(info)} within "
            f"{self.start_timeout_s:.0f} s{self._timeout_hint()}; last lines of "
            f"{self.process.log_file}: {self.tail_log()}"
        )
