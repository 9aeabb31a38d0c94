"""Jaeger's build beside the tests: one build at a time under the installer's lock, the idle CPU
priority, and which tests wait for it. No Go runs: the builds here are stand-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from hosting.servers.jaeger_install import binary_path, install
from shared.settings import Settings
from testkit.jaeger_build import BackgroundBuild, needs_jaeger


class SlowGo:
    """Go as the installer calls it: the build takes a while and writes the binary at the end."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.builds = 0
        self.building = threading.Event()

    def __call__(
        self, command: Sequence[str], env: Mapping[str, str], cwd: Path | None
    ) -> subprocess.CompletedProcess[str]:
        if command[1] == "mod":
            folder = json.dumps({"Dir": str(self.source)})
            return subprocess.CompletedProcess(list(command), 0, folder, "")
        self.builds += 1
        self.building.set()
        time.sleep(0.5)
        output = Path(command[command.index("-o") + 1])
        output.write_text("#!/bin/sh\n")
        output.chmod(0o755)
        return subprocess.CompletedProcess(list(command), 0, "", "")


def test_a_second_install_started_during_a_build_waits_for_it_and_builds_nothing(
    tmp_path: Path,
) -> None:
    settings = Settings(cache=tmp_path, build_cache=tmp_path)
    go = SlowGo(tmp_path / "src")
    results: list[Path] = []
    first = threading.Thread(
        target=lambda: results.append(install(settings, run=go, which=lambda _: "/usr/bin/go"))
    )
    first.start()
    assert go.building.wait(5), "the first build never started"

    second = install(settings, run=go, which=lambda _: "/usr/bin/go")
    first.join(5)

    assert go.builds == 1
    assert second == results[0] == binary_path(settings)


def test_the_idle_flag_puts_the_build_in_the_idle_scheduling_class() -> None:
    probe = (
        "import os; from hosting.servers.jaeger_install import _take_idle_priority; "
        "_take_idle_priority(); print(os.sched_getscheduler(0) == os.SCHED_IDLE or os.nice(0))"
    )
    said = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()

    assert said in ("True", "19"), said


def test_an_installed_jaeger_starts_no_background_build(tmp_path: Path) -> None:
    settings = Settings(cache=tmp_path, build_cache=tmp_path)
    binary = binary_path(settings)
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    build = BackgroundBuild(settings, tmp_path / "build.log")

    assert build.start() is False
    assert build.wait() is None
    assert not (tmp_path / "build.log").exists()


def test_stopping_a_running_build_ends_its_whole_process_group(tmp_path: Path) -> None:
    build = BackgroundBuild(Settings(cache=tmp_path, build_cache=tmp_path), tmp_path / "build.log")
    # A stand-in for the installer and Go's compiler under it: a shell with a child.
    build._process = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], process_group=0)
    group = build._process.pid
    time.sleep(0.2)

    build.stop()

    assert build._process.poll() is not None
    assert _group_gone(group, within_s=5), f"process group {group} still has members"


def _group_gone(group: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)  # an orphaned child is reaped by init a moment later
    return False


def test_tests_with_a_jaeger_or_the_container_stage_need_the_binary() -> None:
    assert needs_jaeger(["jaeger_binary", "jaeger", "tmp_path"], set())
    assert needs_jaeger(["images"], {"containers"})
    assert not needs_jaeger(["kafka_bootstrap", "tmp_path"], {"integration"})
