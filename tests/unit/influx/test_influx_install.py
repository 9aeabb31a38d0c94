"""``python -m hosting.servers.influx_install``: what it runs, when it refuses, and that it
keeps Debian from starting the packaged service. apt itself is replaced by a recorder."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from hosting.servers import influx_install as install


class Apt:
    """Records commands; answers with ``codes`` (0 when empty); notes whether the service-start
    policy was in place while each command ran."""

    def __init__(self, policy: Path, codes: Sequence[int] = ()) -> None:
        self.policy = policy
        self.codes = list(codes)
        self.commands: list[list[str]] = []
        self.policy_during: list[bool] = []
        self.installed = False

    def __call__(self, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.commands.append(list(command))
        self.policy_during.append(self.policy.exists())
        code = self.codes.pop(0) if self.codes else 0
        if command[:2] == ["apt-get", "install"] and code == 0:
            self.installed = True
        return subprocess.CompletedProcess(list(command), code, stdout="E: no network\n")


def run(tmp_path: Path, apt: Apt, *, root: bool) -> tuple[int, list[str]]:
    said: list[str] = []
    code = install.main(
        [],
        run=apt,
        is_root=lambda: root,
        which=lambda name: "/usr/bin/influxd" if apt.installed else None,
        policy_file=apt.policy,
        say=said.append,
    )
    return code, said


def test_without_root_it_says_what_to_run_in_one_line_and_exits_2(tmp_path: Path) -> None:
    apt = Apt(tmp_path / "policy-rc.d")
    code, said = run(tmp_path, apt, root=False)
    assert code == 2
    assert said == [
        "InfluxDB is not installed and installing it needs root: "
        "run `sudo apt-get install influxdb influxdb-client`"
    ]
    assert apt.commands == []


def test_as_root_it_installs_with_apt_and_no_service_may_start(tmp_path: Path) -> None:
    apt = Apt(tmp_path / "policy-rc.d")
    code, _ = run(tmp_path, apt, root=True)
    assert code == 0
    assert apt.commands == [
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "influxdb", "influxdb-client"],
    ]
    assert apt.policy_during == [True, True]
    assert not apt.policy.exists(), "the temporary policy-rc.d is removed afterwards"


def test_an_existing_policy_rc_d_is_left_alone(tmp_path: Path) -> None:
    policy = tmp_path / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 0\n")
    code, _ = run(tmp_path, Apt(policy), root=True)
    assert code == 0
    assert policy.read_text() == "#!/bin/sh\nexit 0\n"


def test_a_failing_apt_exits_1_with_its_last_lines(tmp_path: Path) -> None:
    apt = Apt(tmp_path / "policy-rc.d", codes=[100])
    code, said = run(tmp_path, apt, root=True)
    assert code == 1
    assert "`apt-get update` failed with exit code 100: E: no network" in said[-1]
    assert not apt.policy.exists()


def test_nothing_is_run_when_influxd_is_installed(capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        raise AssertionError(f"ran {command}")

    assert install.main([], run=refuse, which=lambda name: "/usr/bin/influxd") == 0
    assert "installed" in capsys.readouterr().out
