"""Installing Debian packages the mesh runs (InfluxDB, the Docker engine) with apt, as root.

Debian's postinst scripts start a package's service; the mesh runs its own (a loopback-only
influxd, a dockerd without a bridge network), so while apt runs a ``/usr/sbin/policy-rc.d``
answering 101 ("action forbidden"), Debian's standard switch, keeps them from starting, unless the
machine already has one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
_FORBID_SERVICE_START = (
    "#!/bin/sh\n# written by the mesh (hosting.servers.apt_install) while apt runs\nexit 101\n"
)


@contextlib.contextmanager
def services_forbidden(path: Path) -> Iterator[None]:
    """A policy-rc.d forbidding service starts while the block runs, removed afterwards; nothing
    is done when the machine has its own policy-rc.d (that one decides)."""
    if path.exists():
        yield
        return
    path.write_text(_FORBID_SERVICE_START)
    path.chmod(0o755)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def apt_run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(
        list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def install_packages(
    packages: Sequence[str],
    say: Callable[[str], None],
    run: Callable[[Sequence[str]], subprocess.CompletedProcess[str]] = apt_run,
    policy_file: Path = POLICY_RC_D,
) -> bool:
    """``apt-get update`` and ``apt-get install -y PACKAGES`` with service starts forbidden (as
    root); False after saying, in one line, which command failed and its last output."""
    say(f"installing {' '.join(packages)} with apt-get (no service will be started)")
    with services_forbidden(policy_file):
        for command in (["apt-get", "update"], ["apt-get", "install", "-y", *packages]):
            result = run(command)
            if result.returncode != 0:
                tail = " | ".join((result.stdout or "").strip().splitlines()[-5:])
                say(f"`{' '.join(command)}` failed with exit code {result.returncode}: {tail}")
                return False
    return True
