"""Every MESH_ variable is declared once, described, and `mesh settings` shows what is in effect."""

from __future__ import annotations

import re
import subprocess
from collections import Counter

import pytest

from control.cli.main import main
from shared.detector.autoscale import AutoscalePolicy
from shared.detector.manifest import Manifest
from shared.field_docs import field_docs
from shared.notifier_channels import FileChannel, WebhookChannel
from shared.settings import PROJECT_ROOT
from shared.settings_catalogue import declared, effective

#: Where the project's own code and declarations name variables (tests make some up).
CODE = ["shared", "services", "control", "hosting", "tools", "testkit", "bench", "chaos",
        "detectors", "infra", "Makefile"]  # fmt: skip
VARIABLE = re.compile(r"\bMESH_[A-Z0-9_]*[A-Z0-9]\b")


def _named_in_code() -> set[str]:
    files = subprocess.run(["git", "ls-files", "--", *CODE], cwd=PROJECT_ROOT, check=True,
                           capture_output=True, text=True).stdout.split()  # fmt: skip
    names: set[str] = set()
    for name in files:
        path = PROJECT_ROOT / name
        if path.suffix in {".py", ".yml", ".yaml", ".env", ".sh", ""} or "Dockerfile" in name:
            names |= set(VARIABLE.findall(path.read_text(errors="replace")))
    return names


def test_every_variable_the_code_names_is_declared_once_with_a_description() -> None:
    items = declared()
    counts = Counter(item.variable for item in items)
    assert [name for name, n in counts.items() if n > 1] == []
    assert [item.variable for item in items if not item.description.strip()] == []
    named = _named_in_code()
    assert "MESH_INGEST_MODE" in named and "MESH_KAFKA_PORT" in named  # the scan sees both kinds
    assert sorted(named - set(counts)) == []


def test_no_setting_holds_a_secret_only_a_file_path() -> None:
    credentials = [i.variable for i in declared() if "PASSWORD" in i.variable]
    assert credentials == ["MESH_KAFKA_PASSWORD_FILE"]


def test_effective_values_say_which_were_set() -> None:
    env = {"MESH_INGEST_MODE": "micro-batch", "MESH_NOTIFIER_POLL_S": "0.5"}
    rows = {item.variable: (value, was_set) for item, value, was_set in effective(env)}
    assert rows["MESH_INGEST_MODE"] == ("micro-batch", True)
    assert rows["MESH_NOTIFIER_POLL_S"] == ("0.5", True)
    assert rows["MESH_TRACE_SAMPLE_RATIO"] == ("0.01", False)
    assert rows["MESH_HISTORY_DAYS"] == ("60", False)


def test_mesh_settings_prints_values_and_a_bad_one_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MESH_HISTORY_DAYS", "30")
    assert main(["settings", "--set"]) == 0
    out = capsys.readouterr().out
    assert "  MESH_HISTORY_DAYS = 30   (set)" in out and "MESH_BROKER_PORT" not in out
    assert main(["settings", "--all"]) == 0
    assert "MESH_KAFKA_PORT = 29092" in capsys.readouterr().out
    monkeypatch.setenv("MESH_INGEST_MAX_RECORD_BYTES", "lots")
    assert main(["settings"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mesh: error: MESH_INGEST_MAX_RECORD_BYTES='lots' is not an integer; "
                   "set it to a whole number"]  # fmt: skip


@pytest.mark.parametrize("declaration", [Manifest, AutoscalePolicy, WebhookChannel, FileChannel])
def test_every_field_of_the_files_the_mesh_reads_is_described(declaration: type) -> None:
    undescribed = [doc.name for doc, _ in field_docs(declaration) if not doc.description]
    assert undescribed == []


def test_mesh_settings_prints_the_manifest_and_the_channels_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["settings", "--manifest", "--rules"]) == 0
    out = capsys.readouterr().out
    assert "  replicas (required)   (int, 1 or more)" in out
    assert "  batch_wait_ms = 0   (int, 0 to 10000 milliseconds)" in out
    assert "[rules.yaml channels, type: webhook]" in out and "  max_attempts = 5   (int" in out
    assert "MESH_BROKER_PORT" not in out
