"""``python -m hosting.containers.tools_install``: install what the container mesh needs from
Debian's packages when it is missing: the engine (``docker.io``), ``docker-compose`` and
``debootstrap`` (the base image is built from Debian's mirror: no registry is reachable here).

`make test` runs it so the container tests can run on a fresh machine; without root it only
says, in one line, what to run (exit 2), and the container tests then say they cannot run. No
service is started by apt: the tests start their own ``dockerd`` (:mod:`hosting.servers.dockerd`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Sequence

from hosting.servers.apt_install import install_packages

#: The program each package provides, by which we tell it is installed.
PACKAGES = {
    "docker.io": "dockerd",
    "docker-compose": "docker-compose",
    "debootstrap": "debootstrap",
}


def missing(which: Callable[[str], str | None] = shutil.which) -> list[str]:
    return [package for package, program in PACKAGES.items() if which(program) is None]


def main(
    argv: Sequence[str] | None = None,
    *,
    is_root: Callable[[], bool] = lambda: os.geteuid() == 0,
    say: Callable[[str], None] = print,
) -> int:
    """0 when everything is (now) installed, 2 when installing needs root, 1 when apt failed."""
    argparse.ArgumentParser(
        prog="python -m hosting.containers.tools_install",
        description="Install docker.io, docker-compose and debootstrap when missing.",
    ).parse_args(argv)
    wanted = missing()
    if not wanted:
        say("container tools installed: dockerd, docker-compose, debootstrap")
        return 0
    if not is_root():
        say(f"the container mesh needs {', '.join(wanted)}: as root, apt-get install "
            f"{' '.join(wanted)}")  # fmt: skip
        return 2
    if not install_packages(wanted, say):
        return 1
    still = missing()
    if still:
        say(f"apt-get ran but {', '.join(PACKAGES[p] for p in still)} is still not on PATH")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
