"""Jaeger's build beside the tests that do not need it, so a clean clone's ``make test`` does not
wait ~8 minutes for Go before its first test.

On a clean clone (CI) the Jaeger binary does not exist yet, and building it with Go takes ~470 s
of wall time on two cores. Only a few tests need it (those with the ``jaeger`` fixture, and the
container stage, whose ``mesh/jaeger`` image holds the binary), and the serial suite leaves part
of the machine idle while its tests wait on brokers and Spark. So the suite collects, moves the
tests that need Jaeger to the end (:func:`needs_jaeger`), and starts
``python -m hosting.servers.jaeger_install --idle`` in the background: Linux runs an idle-class
process only on a core nothing else wants, so the tests ahead are not slowed. The first test
that needs Jaeger waits for the build (:meth:`BackgroundBuild.wait`); the installer's lock makes
a second build started meanwhile wait for this one rather than build it twice.

The build stays in pytest's own session (no ``setsid``): Linux's autogroup scheduling would give
a new session its own fair share of the CPU, idle class or not. It gets its own process group,
so stopping it stops Go's compiler processes too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from hosting.servers.jaeger_install import installed
from shared.settings import Settings

__all__ = ["BackgroundBuild", "needs_jaeger"]


def needs_jaeger(fixture_names: list[str] | tuple[str, ...], markers: set[str]) -> bool:
    """Whether a test needs the Jaeger binary: it runs a Jaeger (the ``jaeger`` or
    ``jaeger_binary`` fixture) or the container stage, whose images include Jaeger's."""
    return bool({"jaeger", "jaeger_binary"} & set(fixture_names)) or "containers" in markers


class BackgroundBuild:
    """One background build of Jaeger for a test session, started only when it is missing."""

    def __init__(self, settings: Settings, log_file: Path) -> None:
        self.settings = settings
        self.log_file = log_file
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[Any] | None = None

    @classmethod
    def for_settings(cls, settings: Settings) -> BackgroundBuild:
        """The build for ``settings``' build cache, its log beside the binaries (jaeger/)."""
        return cls(settings, settings.build_cache / "jaeger" / "build.log")

    def start(self) -> bool:
        """Start the build unless Jaeger is installed; whether a build was started."""
        if self._process is not None or installed(self.settings) is not None:
            return False
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_file.open("wb")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "hosting.servers.jaeger_install", "--idle"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            process_group=0,
        )
        return True

    def running(self) -> bool:
        """Whether the build this started is still going."""
        return self._process is not None and self._process.poll() is None

    def wait(self) -> str | None:
        """Wait for Jaeger to be installed: None when it is, else the reason it is not.

        With no build started yet this starts one and waits for it (the installer's lock makes
        that wait for a build some other command started)."""
        if self._process is None:
            self.start()
        if self._process is not None:
            self._process.wait()
            self._close_log()
        if installed(self.settings) is not None:
            return None
        return self._said() or "the Jaeger build ended without a binary and said nothing"

    def stop(self) -> None:
        """Stop a build still running (the session ended first); Go's build cache keeps what it
        compiled, so the next build goes on from there."""
        process = self._process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            except ProcessLookupError:
                pass
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def _said(self) -> str:
        try:
            lines = self.log_file.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-3:])
