"""A whole mesh started by `mesh up` as a user starts it, for a benchmark: on the run's broker,
with a MESH_HOME and topic prefix of its own (so runs never share topics, groups or state), and
stopped by `mesh down` however the benchmark ends."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from shared.settings import Settings

#: The longest wait for `mesh up` to say the mesh can alert.
READY_TIMEOUT_S = 300


def mesh(env: dict[str, str], *args: str, timeout: float = 300) -> str:
    """``mesh ARGS`` as a user types it, in ``env``; its output, or an error with what it said."""
    done = subprocess.run(
        [sys.executable, "-m", "control.cli.main", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines()[-3:]
        raise RuntimeError(f"mesh {' '.join(args)} failed: {' | '.join(said)}")
    return done.stdout


@dataclass(frozen=True)
class PrivateMesh:
    #: the run's settings with this mesh's home and topic prefix
    settings: Settings
    #: the environment every `mesh` command of this mesh runs in
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 300) -> str:
        return mesh(self.env, *args, timeout=timeout)

    def up(self) -> float:
        """`mesh up`, which returns once the mesh can alert; the seconds it took."""
        started = time.monotonic()
        self.run("up", "--wait-timeout", str(READY_TIMEOUT_S), timeout=READY_TIMEOUT_S + 120)
        return time.monotonic() - started


@contextmanager
def private_mesh(settings: Settings, name: str, **env: str) -> Iterator[PrivateMesh]:
    """A private mesh called ``name`` (its home's and topics' prefix), ``env`` added to its
    environment (``MESH_INGEST_MODE=...``); not started: :meth:`PrivateMesh.up` starts it, and
    `mesh down` stops it at the end (a no-op when it never started or was stopped already)."""
    with tempfile.TemporaryDirectory(prefix=f"mesh-bench-{name}-") as home:
        prefix = f"bench.{name}.{uuid.uuid4().hex[:8]}."
        private = replace(settings, home=Path(home), topic_prefix=prefix)
        base = {"MESH_BOOTSTRAP_SERVERS": private.bootstrap_servers, "MESH_HOME": home,
                "MESH_TOPIC_PREFIX": prefix}  # fmt: skip
        running = PrivateMesh(private, {**base, **env})
        try:
            yield running
        finally:
            running.run("down", timeout=300)
