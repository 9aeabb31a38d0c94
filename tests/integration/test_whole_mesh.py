"""One whole mesh as a user starts it, `mesh up --secure`, checked from every side that needs a
whole mesh: what `make test` used to check on three (test_secure_mesh_up, test_mesh_metrics and
test_cli's up/status/down), each ~90-160 s of JVM starts on two cores. Their checks do not
collide, so they share one mesh, in this order (the tests below depend on it: pytest runs a
module's tests in definition order, and the last two change the mesh):

1. `mesh up --secure` on a fresh MESH_HOME and a busy preferred port: a secure broker on the
   next free port, every declared topic, each service as its own principal over TLS, returned
   once a probe went through ingest and every detector; a second `up` finds it all running.
2. The demo's path: planted fraud produced, routed by the Spark ingest job, alerted by the three
   detectors (every planted alert checked off against the generator's ground truth), kept by
   the Spark history job.
3. Metrics into a real InfluxDB: per detector and per instance, the series equal what the
   instances counted; ingest's valid count equals the records produced plus `mesh up`'s probes;
   the notifier's alerts too.
4. Operations: `mesh status` (and `--latency`'s rows), a SIGKILLed aggregator restarted by its
   supervisor, `mesh stop` of one detector leaving another untouched, `mesh logs`, a refused
   unknown name.
5. `mesh down` stops everything; no password shows in a log, `mesh status` or the CLI's output.

Why secure: the plaintext path is the secure one minus the logins, and the chaos case
``secure_mesh`` covers the refusals; a plaintext whole mesh runs in test_diamond's and the
container tests' form.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mesh_cli import mesh, run_module
from polling import wait_for

from control.launch.aggregator import aggregator_process
from control.supervised_service import supervised_child
from shared.endpoints import resolve_bootstrap
from shared.influx.writer import InfluxWriter
from shared.json_files import read_json
from shared.kafka.inspect import topic_views
from shared.kafka.security import client_security
from shared.settings import Settings
from testkit.influx_query import query, records_in_per_instance

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PRINCIPALS = ("ingest", "metrics-aggregator", "history", "notifier", "detector-large_amount",
              "detector-new_country", "detector-velocity")  # fmt: skip
DETECTORS = ("large_amount", "new_country", "velocity")
RECORDS = 3000
SEED = "19"


@dataclass
class WholeMesh:
    env: dict[str, str]
    home: Path
    influx_url: str
    database: str
    #: the preferred port `mesh up` found busy
    busy_port: int
    up: str
    #: every output of the CLI, searched for passwords at the end
    outputs: list[str] = field(default_factory=list)
    #: valid records routed while `mesh up` waited for readiness (its probes)
    probes: int = 0
    #: valid records `mesh produce` reported
    valid: int = 0
    down: str | None = None

    def run(self, *args: str, timeout: float = 120) -> Any:
        result = mesh(*args, env=self.env, timeout=timeout)
        self.outputs.append(result.stdout + result.stderr)
        return result

    @property
    def settings(self) -> Settings:
        return Settings.from_env(self.env)


@pytest.fixture(scope="module")
def whole_mesh(influxdb: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WholeMesh]:
    home = tmp_path_factory.mktemp("whole-mesh") / "home"
    database = "whole_mesh"
    InfluxWriter(influxdb.url, database).ensure_database()  # to query it before the first point
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {
            "MESH_HOME": str(home),
            "MESH_BROKER_PORT": str(port),
            "MESH_INFLUX_URL": influxdb.url,
            "MESH_INFLUX_DB": database,
            "MESH_METRICS_INTERVAL_S": "2",
        }
        up = mesh("up", "--secure", env=env, timeout=420)
        the_mesh = WholeMesh(env, home, influxdb.url, database, port, up.stdout + up.stderr)
        the_mesh.outputs.append(the_mesh.up)
        try:
            assert up.returncode == 0, the_mesh.up
            yield the_mesh
        finally:
            if the_mesh.down is None:
                mesh("down", env=env, timeout=180)


def test_up_secure_starts_every_service_as_its_own_principal_and_returns_ready(whole_mesh):
    up = whole_mesh.up
    assert f"(port {whole_mesh.busy_port} was busy)" in up, up
    assert "its own principal with SASL/SCRAM over TLS" in up, up
    assert "created   raw.transactions" in up, up
    for service in ("started ingest pid", "started notifier pid", "started metrics aggregator"):
        assert service in up, up
    # `mesh up` returned once a probe went through ingest and every detector, as principals.
    assert re.search(r"^ready +to alert .*\(large_amount, new_country, velocity\)$", up, re.M), up

    again = whole_mesh.run("up", "--no-wait")
    assert "already running" in again.stdout and "unchanged raw.transactions" in again.stdout
    assert "already running: ingest pid" in again.stdout
    assert "already running: notifier pid" in again.stdout


def test_planted_fraud_is_alerted_by_every_detector_and_kept_by_the_history(whole_mesh):
    settings = whole_mesh.settings
    bootstrap = resolve_bootstrap(settings)
    valid_topics = [f"records.{t}" for t in ("transactions", "logins")]
    login = client_security(settings)
    whole_mesh.probes = sum(v.written for v in topic_views(bootstrap, valid_topics, login=login))
    assert whole_mesh.probes > 0, "mesh up returned before a probe went through ingest"
    produced = whole_mesh.run("produce", "--count", str(RECORDS), "--rate", "1000",
                              "--event-rate", "1000", "--customers", "100000", "--fraud-share",
                              "0.01", "--seed", SEED, "--no-progress")  # fmt: skip
    assert produced.returncode == 0, produced.stdout + produced.stderr
    whole_mesh.valid = int(re.search(r"valid (\d+)", produced.stdout).group(1))  # type: ignore[union-attr]

    score = run_module("tools.loadgen.score", "--seed", SEED, env=whole_mesh.env, timeout=300)
    whole_mesh.outputs.append(score.stdout + score.stderr)
    assert score.returncode == 0, score.stdout + score.stderr  # every planted alert raised
    for detector in DETECTORS:  # and there were some
        found = re.search(rf"^{detector}\s+(\d+) of (\d+) planted", score.stdout, re.M)
        assert found and int(found[2]) > 0 and found[1] == found[2], score.stdout

    # The history job reads the records as its own principal (a batch a minute).
    history = wait_for(lambda: (out := whole_mesh.run("history").stdout)
                       and re.search(r"^  transactions +[1-9]", out, re.M) and out,
                       150, "the history job to store the records")  # fmt: skip
    assert history


def test_influxdb_series_equal_what_every_instance_counted(whole_mesh):
    """The metrics issue's "done when", as a user would check it."""
    assert whole_mesh.valid > 0, "needs the planted-fraud test's records"
    url, database, home = whole_mesh.influx_url, whole_mesh.database, whole_mesh.home

    def detectors_match() -> bool:
        replicas = _replica_records(home)
        totals = _totals(url, database, "records.in")
        return (
            sum(n for per in replicas.values() for n in per.values()) >= whole_mesh.valid
            and bool(replicas)
            and all(totals.get(f"detector.{d}") == sum(r.values()) for d, r in replicas.items())
        )

    wait_for(detectors_match, timeout=240, interval=2.0,
             what="InfluxDB's records.in totals to equal each detector's own counters")  # fmt: skip
    replicas = _replica_records(home)
    assert set(replicas) == set(DETECTORS)
    assert len(replicas["velocity"]) == 2  # its manifest asks for two replicas
    for detector, own in replicas.items():
        assert _per_instance(url, database, f"detector.{detector}") == own, detector

    expected = whole_mesh.valid + whole_mesh.probes
    wait_for(
        lambda: _totals(url, database, "ingest.records.valid").get("ingest") == expected,
        timeout=60,
        what=f"InfluxDB's ingest.records.valid to reach the {whole_mesh.valid} valid records "
        f"produced and the {whole_mesh.probes} probe records",
    )

    def notifier_matches() -> bool:  # the notifier reports like every instance
        taken = int((read_json(home / "notifier" / "status.json") or {}).get("alerts", 0))
        return taken > 0 and _totals(url, database, "notifier.alerts").get("notifier") == taken

    wait_for(notifier_matches, timeout=120, interval=2.0,
             what="InfluxDB's notifier.alerts total to equal the notifier's own count")  # fmt: skip


def test_status_shows_every_service_and_the_supervisor_restarts_a_killed_aggregator(whole_mesh):
    status = wait_for(lambda: (out := whole_mesh.run("status").stdout)
                      and "snapshots" in out and " 0 snapshots" not in out and out,
                      120, "the aggregator to take metrics snapshots")  # fmt: skip
    for service in ("broker   UP", "ingest   UP", "metrics  UP", "history  UP", "notifier UP"):
        assert service in status, status
    assert "records.invalid" in status and "last error" not in status, status
    assert re.search(r"metrics\s+UP .* influx ok", status), status
    for detector in DETECTORS:
        assert re.search(rf"^detector {detector}\s+UP\s", status, re.M), status
    assert "detector velocity       UP      2/2  v1.0.0" in status, status

    # The tail over time, as the planted-fraud test's feed left it (its alerts and deliveries).
    latency = whole_mesh.run("status", "--latency", "--minutes", "15").stdout
    assert re.search(r"^all +[1-9]\d* alerts: p50 \d+, p99 \d+", latency, re.M), latency
    assert re.search(r"[1-9]\d* notified: p50 \d+", latency), latency
    assert re.search(r"^\d\d:\d\d:\d\d +[1-9]", latency, re.M), latency  # a row per 5 s

    aggregator = aggregator_process(whole_mesh.settings)
    job = supervised_child(aggregator)
    assert job is not None and job.pid is not None, job
    os.kill(job.pid, signal.SIGKILL)
    killed = "restarts 1 (last exit: killed by SIGKILL)"
    wait_for(lambda: killed in whole_mesh.run("status").stdout, 60,
             "mesh status to show the aggregator restarted by its supervisor")  # fmt: skip
    restarted = supervised_child(aggregator)
    assert restarted is not None and restarted.pid not in (None, job.pid)


def test_stop_one_detector_leaves_the_others_and_logs_answer(whole_mesh):
    large_amount_before = _detector_state(whole_mesh.run("status").stdout, "large_amount")
    assert large_amount_before[0] == "UP" and len(large_amount_before[1]) == 1

    stopped = whole_mesh.run("stop", "velocity")
    assert stopped.returncode == 0 and stopped.stdout.count("stopped detector-velocity") == 2
    after_stop = whole_mesh.run("status").stdout
    assert "detector velocity       STOPPED 0/2" in after_stop
    # Same state and the same replica pid: lag and rate figures may differ between two looks.
    assert _detector_state(after_stop, "large_amount") == large_amount_before, (
        "stopping one detector touched another"
    )
    logs = whole_mesh.run("logs", "large_amount", "-n", "5")
    assert logs.returncode == 0 and logs.stdout.strip()
    unknown = whole_mesh.run("stop", "no_such_detector")
    assert unknown.returncode == 2
    assert "known: ingest, notifier, large_amount, new_country, velocity" in unknown.stderr
    notifier_logs = whole_mesh.run("logs", "notifier", "-n", "50")
    assert "took alerts partitions" in notifier_logs.stdout, notifier_logs.stdout


def test_down_stops_everything_and_no_password_shows_anywhere(whole_mesh):
    down = whole_mesh.run("down", timeout=180)
    whole_mesh.down = down.stdout
    assert down.returncode == 0, down.stdout + down.stderr
    assert "stopped Kafka broker" in down.stdout and "stopped ingest pid" in down.stdout
    assert "stopped notifier pid" in down.stdout
    assert down.stdout.count("stopped detector") == 2  # velocity was stopped already
    after = whole_mesh.run("status")
    assert after.returncode == 1 and "DOWN" in after.stdout

    secrets = whole_mesh.home / "secrets"
    for principal in PRINCIPALS:
        password_file = secrets / f"{principal}.password"
        assert password_file.is_file(), f"no principal {principal}"
        assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    for private in (secrets / "ca.key", *whole_mesh.home.rglob("broker.pem")):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    passwords = [p.read_text().strip() for p in secrets.glob("*.password")]
    assert len(passwords) >= len(PRINCIPALS) + 1  # and the admin's
    logs = {path: path.read_text(errors="replace") for path in whole_mesh.home.rglob("*.log")}
    assert len(logs) >= 5, sorted(logs)
    for password in passwords:
        for path, text in logs.items():
            assert password not in text, f"a password is in {path}"
        for text in whole_mesh.outputs:
            assert password not in text, "a password is in the CLI's output"


def _detector_state(status: str, name: str) -> tuple[str, list[str]]:
    """A detector's state word in `mesh status` and the pids of its replica lines below it."""
    lines = status.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith(f"detector {name} "))
    pids = []
    for line in lines[index + 1 :]:
        if not line.startswith("  "):
            break
        if line.strip().startswith(("autoscale ", "shadow ")):  # the detector's, not a replica's
            continue
        pids.append(line.split("pid", 1)[1].split()[0])
    return lines[index].split()[2], pids


def _replica_records(home: Path) -> dict[str, dict[str, int]]:
    """detector -> replica name -> records, from the replicas' own status files."""
    out: dict[str, dict[str, int]] = {}
    for path in home.glob("detector-*-r*-*/instance.json"):
        status = read_json(path) or {}
        replica = path.parent.name
        detector = re.fullmatch(r"detector-(.+)-r\d+-\d+", replica).group(1)  # type: ignore[union-attr]
        out.setdefault(detector, {})[replica] = int(status.get("records", 0))
    return out


def _totals(url: str, database: str, measurement: str) -> dict[str, int]:
    rows = query(
        url,
        database,
        f'SELECT last("count") FROM "{measurement}" WHERE scope=\'all\' GROUP BY service',
    )
    return {row["service"]: int(row["last"]) for row in rows}


def _per_instance(url: str, database: str, service: str) -> dict[str, int]:
    """replica name -> last count of its instance (instance ids are ``<replica>@host:pid:ms``)."""
    per_instance = records_in_per_instance(url, database, service)
    return {instance.split("@")[0]: count for instance, count in per_instance.items()}
