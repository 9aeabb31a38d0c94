"""A named background process of the local mesh: start, find, stop — only our own.

Each service gets ``$MESH_HOME/<name>/`` with ``process.json`` (pid, command, start time) and
``<name>.log``. The child runs in its own session (a Ctrl-C in the terminal that ran ``mesh up``
does not kill it) and carries ``MESH_PROCESS_TAG=<home>/<name>`` in its environment; ``stop``
signals a pid only if that process still carries our tag, so a recycled pid is never killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.errors import MeshError
from shared.file_lock import folder_lock
from shared.pids import wait_gone

TAG_VARIABLE = "MESH_PROCESS_TAG"


class ProcessError(MeshError):
    """A local mesh process could not be started or stopped."""


@dataclass(frozen=True)
class ProcessInfo:
    name: str
    pid: int
    started: float
    command: list[str]

    @property
    def uptime_s(self) -> float:
        return time.time() - self.started


class LocalProcess:
    """The process called ``name`` under ``home``."""

    def __init__(self, name: str, home: Path) -> None:
        self.name = name
        self.dir = home / name
        self.pid_file = self.dir / "process.json"
        self.log_file = self.dir / f"{name}.log"
        self.tag = f"{home}/{name}"

    def running(self) -> ProcessInfo | None:
        try:
            info = ProcessInfo(**json.loads(self.pid_file.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            return None
        if self._owns(info.pid):
            return info
        self.pid_file.unlink(missing_ok=True)
        return None

    def _owns(self, pid: int) -> bool:
        """Whether ``pid`` is alive and carries our tag.

        Right after ``Popen`` returns, the kernel may still be setting up the new program
        (vfork lets the parent go on before execve has placed the environment), and
        ``/proc/<pid>/environ`` reads empty for a moment: that is "not yet", not "not ours".
        """
        tag = f"{TAG_VARIABLE}={self.tag}".encode()
        for _ in range(50):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            except OSError:
                return False
            if environ or state == "Z":
                return state != "Z" and tag in environ.split(b"\0")
            time.sleep(0.01)
        return False

    def start(self, command: list[str], env: Mapping[str, str]) -> tuple[ProcessInfo, bool]:
        """Start unless running; returns the process and whether this call started it."""
        with self._lock():
            existing = self.running()
            if existing is not None:
                return existing, False
            with self.log_file.open("ab") as log:
                process = subprocess.Popen(
                    command,
                    env={**env, TAG_VARIABLE: self.tag},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            info = ProcessInfo(self.name, process.pid, time.time(), command)
            self.pid_file.write_text(json.dumps(info.__dict__))
            return info, True

    def signal(self, signum: int) -> ProcessInfo | None:
        """Send ``signum`` to our process if it runs (used by fault tests for SIGKILL)."""
        info = self.running()
        if info is not None:
            os.kill(info.pid, signum)
        return info

    def stop(self, timeout: float = 60.0, descendants_s: float = 15.0) -> ProcessInfo | None:
        """SIGTERM, then SIGKILL after ``timeout``; None if it was not running.

        Then its descendants (a Spark driver's JVM and Python workers carry the tag too): they
        get ``descendants_s`` to finish on their own, as a JVM does once its driver is gone,
        and are stopped like strays after that.
        """
        with self._lock():
            info = self.running()
            if info is None:
                return None
            os.kill(info.pid, signal.SIGTERM)
            if not self.wait_gone(info.pid, timeout):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(info.pid, signal.SIGKILL)
                self.wait_gone(info.pid, 10)
            self.pid_file.unlink(missing_ok=True)
            tag = f"{TAG_VARIABLE}={self.tag}".encode()
            remaining = _pids_with(lambda environ: tag in environ)
            deadline = time.monotonic() + descendants_s
            for pid in remaining:
                wait_gone(pid, max(0.0, deadline - time.monotonic()))
            _terminate([pid for pid in remaining if Path(f"/proc/{pid}").exists()], 10)
            return info

    def wait_gone(self, pid: int, timeout: float) -> bool:
        """Wait until ``pid`` has exited (reaping it if it is our child); True if it has."""
        return wait_gone(pid, timeout)

    def tail_log(self, lines: int = 20) -> list[str]:
        try:
            return self.log_file.read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            return []

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return folder_lock(self.dir, ProcessError)


def stray_pids(home: Path) -> list[int]:
    """Live processes carrying a tag of ``home`` (started by a LocalProcess there, or their
    children) whose LocalProcess no longer runs by its pid file: they were lost. (What still
    runs tracked, such as the broker that `mesh down` stops last, is not a stray.)"""
    prefix = f"{TAG_VARIABLE}={home}/".encode()
    tracked: dict[str, bool] = {}

    def lost(environ: list[bytes]) -> bool:
        for item in environ:
            # <home>/<name>, and a name has no slash: a home nested inside this one is not ours.
            name = item[len(prefix) :]
            if item.startswith(prefix) and b"/" not in name:
                key = name.decode(errors="replace")
                if key not in tracked:
                    tracked[key] = LocalProcess(key, home).running() is not None
                return not tracked[key]
        return False

    return _pids_with(lost)


def tagged_pids(home: Path) -> dict[str, list[int]]:
    """Every live process started by a LocalProcess of ``home``, with its children (a service's
    JVM, its Python workers, a supervised child), by that LocalProcess's name."""
    prefix = f"{TAG_VARIABLE}={home}/".encode()
    found: dict[str, list[int]] = {}
    for pid, environ in _environments():
        for item in environ:
            name = item[len(prefix) :]
            if item.startswith(prefix) and b"/" not in name:
                found.setdefault(name.decode(errors="replace"), []).append(pid)
                break
    return found


def stop_strays(home: Path, timeout: float = 30.0) -> list[int]:
    """SIGTERM every stray of ``home``, SIGKILL what is left after ``timeout``; their pids."""
    strays = stray_pids(home)
    _terminate(strays, timeout)
    return strays


def _pids_with(match: Callable[[list[bytes]], bool]) -> list[int]:
    """Live processes (not this one) whose environment entries satisfy ``match``."""
    return sorted(pid for pid, environ in _environments() if pid != os.getpid() and match(environ))


def _environments() -> Iterator[tuple[int, list[bytes]]]:
    """Every readable live process and its environment entries."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            yield int(entry.name), (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue


def _terminate(pids: list[int], timeout: float) -> None:
    """SIGTERM ``pids``, SIGKILL those still there after ``timeout``."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in pids:
        if not wait_gone(pid, timeout):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            wait_gone(pid, 10)
