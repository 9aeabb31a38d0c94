"""What `mesh deploy` refuses before anything runs, and the one line it says.

These call the check in-process (:func:`check_folder`); the CLI runs the same function in a
throwaway process, which tests/integration/test_deploy_cli.py covers.
"""

import json
import re
import subprocess
import sys

from detector_folders import write_detector

from control.deploy.validate import DRY_RUN_RECORDS, check_folder
from shared.settings import PROJECT_ROOT


def test_a_working_detector_passes_with_its_dry_run_figures(tmp_path):
    verdict = check_folder(write_detector(tmp_path / "big", "big_spender"))
    assert verdict["ok"], verdict
    # transactions only: the logins among the generated records are not this detector's input
    assert verdict["name"] == "big_spender" and 0 < verdict["records"] < DRY_RUN_RECORDS
    assert verdict["alerts"] > 0  # the generated amounts do pass 900 now and then


def test_a_syntax_error_names_the_file_and_line(tmp_path):
    folder = write_detector(tmp_path / "d", "broken", body="return [ctx.alert(]")
    verdict = check_folder(folder)
    assert not verdict["ok"]
    assert verdict["error"].startswith(f"{folder / 'detector.py'}:6: syntax error")


def test_an_import_time_failure_names_the_line_and_the_exception(tmp_path):
    folder = write_detector(tmp_path / "d", "boom", preamble="LIMITS = {}['EUR']\n")
    verdict = check_folder(folder)
    assert verdict == {
        "ok": False,
        "error": f"importing {folder / 'detector.py'}:2 failed: KeyError: 'EUR'",
    }


def test_a_failing_dry_run_says_how_many_records_failed_and_why(tmp_path):
    folder = write_detector(tmp_path / "d", "typo", body="return [] if record['amout'] else []")
    verdict = check_folder(folder)
    assert not verdict["ok"]
    failed, fed = re.match(r"dry run: (\d+) of (\d+) records failed", verdict["error"]).groups()
    assert failed == fed  # every transaction, and only transactions, went through detect
    assert verdict["error"].endswith("KeyError: 'amout'")


def test_an_unknown_input_type_is_refused_by_name(tmp_path):
    folder = write_detector(tmp_path / "d", "payments", manifest_inputs=("payments",))
    verdict = check_folder(folder)
    assert not verdict["ok"] and "unknown input type 'payments'" in verdict["error"]


def test_code_and_manifest_must_agree(tmp_path):
    folder = write_detector(tmp_path / "d", "agree", version="2.0.0")
    (folder / "manifest.yaml").write_text(
        (folder / "manifest.yaml").read_text().replace("2.0.0", "2.0.1")
    )
    verdict = check_folder(folder)
    assert not verdict["ok"] and "field `version` is '2.0.1'" in verdict["error"]


def test_the_command_line_prints_one_json_verdict(tmp_path):
    folder = write_detector(tmp_path / "d", "noisy", preamble="print('hello from import')\n")
    done = subprocess.run(
        [sys.executable, "-m", "control.deploy.validate", str(folder)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1])["ok"]
