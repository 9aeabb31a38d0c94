"""`mesh up --secure` on a fresh MESH_HOME, as a user runs it (issue 19, case 14's whole-mesh
form): every service logs in as its own principal over TLS, and the demo's path works end to
end: records produced, routed by the Spark ingest job, alerted by the three detectors (each
planted fraud, checked off against the generator's ground truth), metrics aggregated by the
Spark aggregator, kept by the Spark history job; and no password shows in a log, `mesh status`
or the CLI's output.

The secure case in `make test` (chaos ``secure_mesh``) covers the refusals on one detector; this
covers what it cannot: both Spark jobs and `mesh` itself on the secure broker.
"""

from __future__ import annotations

import re
import stat

import pytest
from mesh_cli import mesh, run_module
from polling import wait_for

from hosting.servers.ports import ephemeral_port

pytestmark = pytest.mark.integration

PRINCIPALS = ("ingest", "metrics-aggregator", "history", "notifier", "detector-large_amount",
              "detector-new_country", "detector-velocity")  # fmt: skip


@pytest.mark.timeout(600)  # a whole mesh: two Spark jobs, three detectors, a secure broker
def test_mesh_up_secure_runs_the_diamond_over_tls_as_one_principal_per_service(tmp_path):
    home = tmp_path / "home"
    env = {"MESH_HOME": str(home), "MESH_BROKER_PORT": str(ephemeral_port("127.0.0.1"))}
    outputs = []
    try:
        up = mesh("up", "--secure", env=env, timeout=420)
        outputs.append(up.stdout + up.stderr)
        assert up.returncode == 0, up.stderr
        assert "its own principal with SASL/SCRAM over TLS" in up.stdout, up.stdout
        # `mesh up` returned once a probe went through ingest and every detector, as principals.
        assert re.search(r"^ready +to alert .*\(large_amount, new_country, velocity\)$",
                         up.stdout, re.M), up.stdout  # fmt: skip
        produced = mesh("produce", "--count", "3000", "--rate", "0", "--event-rate", "2000",
                        "--customers", "100000", "--fraud-share", "0.01", "--seed", "19",
                        "--no-progress", env=env)  # fmt: skip
        outputs.append(produced.stdout + produced.stderr)
        assert produced.returncode == 0, produced.stderr
        score = run_module("tools.loadgen.score", "--seed", "19", env=env, timeout=300)
        outputs.append(score.stdout + score.stderr)
        assert score.returncode == 0, score.stdout + score.stderr  # every planted alert raised
        for detector in ("large_amount", "new_country", "velocity"):  # and there were some
            found = re.search(rf"^{detector}\s+(\d+) of (\d+) planted", score.stdout, re.M)
            assert found and int(found[2]) > 0 and found[1] == found[2], score.stdout

        status = wait_for(lambda: (out := mesh("status", env=env).stdout)
                          and "snapshots" in out and " 0 snapshots" not in out and out,
                          120, "the aggregator to take metrics snapshots")  # fmt: skip
        outputs.append(status)
        for service in ("ingest   UP", "metrics  UP", "history  UP", "notifier UP"):
            assert service in status, status
        # The history job reads the records as its own principal (a batch a minute).
        history = wait_for(lambda: (out := mesh("history", env=env).stdout)
                           and re.search(r"^  transactions +[1-9]", out, re.M) and out,
                           150, "the history job to store the records")  # fmt: skip
        outputs.append(history)
        for detector in ("large_amount", "new_country", "velocity"):
            assert re.search(rf"^detector {detector}\s+UP\s", status, re.M), status
        assert "last error" not in status, status
    finally:
        down = mesh("down", env=env, timeout=180)
    assert down.returncode == 0, down.stderr

    secrets = home / "secrets"
    for principal in PRINCIPALS:
        password_file = secrets / f"{principal}.password"
        assert password_file.is_file(), f"no principal {principal}"
        assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    for private in (secrets / "ca.key", *home.rglob("broker.pem")):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    passwords = [p.read_text().strip() for p in secrets.glob("*.password")]
    assert len(passwords) >= len(PRINCIPALS) + 1  # and the admin's
    logs = {path: path.read_text(errors="replace") for path in home.rglob("*.log")}
    assert len(logs) >= 5, sorted(logs)
    for password in passwords:
        for path, text in logs.items():
            assert password not in text, f"a password is in {path}"
        for text in outputs:
            assert password not in text, "a password is in the CLI's output"
