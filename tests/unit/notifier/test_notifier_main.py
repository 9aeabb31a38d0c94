"""The notifier's command line refuses what it cannot use in one line, before it touches Kafka."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shared.settings import PROJECT_ROOT


def _run(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "services.notifier", *args],
        cwd=PROJECT_ROOT,
        env={"PATH": "/usr/bin:/bin", "MESH_HOME": str(tmp_path / "home"), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


BAD_RULES = """channels:
  team: {type: webhook, url: http://127.0.0.1:9/x, timeout_s: fast}
rules:
  - channels: [team]
"""


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--rules", "RULES"], {}, "rules.yaml:2: "),
        (["--rules", "RULES"], {}, "channels.team.timeout_s"),
        ([], {"MESH_NOTIFIER_RULES": "/nonexistent/rules.yaml"}, "/nonexistent/rules.yaml"),
        ([], {"MESH_NOTIFIER_DEDUP_TTL_S": "0"}, "MESH_NOTIFIER_DEDUP_TTL_S"),
        (["--no-such-flag"], {}, "--no-such-flag"),
    ],
)
def test_a_bad_rules_file_setting_or_flag_is_one_line_and_exit_2(
    args: list[str], env: dict[str, str], expected: str, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(BAD_RULES)
    result = _run([str(rules) if a == "RULES" else a for a in args], env, tmp_path)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("notifier: error: "), result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


def test_a_broker_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    result = _run([], {"MESH_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}"}, tmp_path)
    assert result.returncode == 2, result
    (line,) = result.stderr.strip().splitlines()
    assert f"Kafka at 127.0.0.1:{port} did not answer" in line
