"""``python -m hosting.servers.influx_install``: install Debian's InfluxDB 1.x when ``influxd``
is missing.

Why a module: ``make test`` on a fresh machine must work (the test session starts its own
InfluxDB), and the CI machine runs as root. Without root it does nothing but say, in one line,
what to run; exit code 2.

The mesh never uses the packaged service (it runs its own loopback-only influxd, see
:mod:`hosting.servers.influx`), so the install keeps Debian's postinst from starting one: while apt
runs, a ``/usr/sbin/policy-rc.d`` answering 101 ("action forbidden") is put in place, Debian's
standard switch for that, unless the machine already has one. If an influxd that is not ours
runs afterwards anyway, it is reported, never killed: it may be somebody's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hosting.servers.apt_install import POLICY_RC_D, apt_run, install_packages
from shared.local_process import TAG_VARIABLE

PACKAGES = ("influxdb", "influxdb-client")
NOT_ROOT_MESSAGE = (
    "InfluxDB is not installed and installing it needs root: "
    "run `sudo apt-get install influxdb influxdb-client`"
)

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def main(
    argv: Sequence[str] | None = None,
    *,
    run: Runner | None = None,
    is_root: Callable[[], bool] = lambda: os.geteuid() == 0,
    which: Callable[[str], str | None] = shutil.which,
    policy_file: Path = POLICY_RC_D,
    say: Callable[[str], None] = print,
) -> int:
    """0 when influxd is (now) installed, 2 when that needs root, 1 when apt failed."""
    argparse.ArgumentParser(
        prog="python -m hosting.servers.influx_install",
        description="Install InfluxDB 1.x from Debian's packages when influxd is missing.",
    ).parse_args(argv)
    run = run or apt_run
    found = which("influxd")
    if found is not None:
        say(f"InfluxDB is installed: {found}")
        return 0
    if not is_root():
        say(NOT_ROOT_MESSAGE)
        return 2
    if not install_packages(PACKAGES, say, run, policy_file):
        return 1
    for pid in foreign_influxd_pids():
        say(
            f"warning: an influxd not started by the mesh runs (pid {pid}); it was left alone, "
            "stop it with `systemctl stop influxdb` or `service influxdb stop` if unwanted"
        )
    if which("influxd") is None:
        say("apt-get installed the packages but influxd is still not on PATH")
        return 1
    return 0


def foreign_influxd_pids() -> list[int]:
    """Live ``influxd`` processes that carry no mesh process tag (the packaged service, or
    somebody else's)."""
    marker = f"{TAG_VARIABLE}=".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "influxd":
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if not any(item.startswith(marker) for item in environ):
            pids.append(int(entry.name))
    return sorted(pids)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
