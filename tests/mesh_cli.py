"""Run the `mesh` command as a user does: a real process, real output, real exit codes."""

from __future__ import annotations

import os
import subprocess
import sys

from shared.settings import PROJECT_ROOT


def mesh(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``mesh ARGS`` with exactly ``env`` on top of PATH, HOME and LANG."""
    return run_module("control.cli.main", *args, env=env, timeout=timeout)


def run_module(
    module: str, *args: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``python -m MODULE ARGS`` (a `mesh` verb, or a tool `make demo` runs) the same way."""
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=PROJECT_ROOT,
    )
