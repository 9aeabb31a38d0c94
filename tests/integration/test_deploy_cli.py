"""`mesh deploy`, `stop`, `status` and `rollout` as a user runs them, on a private mesh.

Each test deploys detectors written in a few lines (tests/detector_folders.py) into a mesh of
its own on the session broker, feeds validated records straight into its ``records.*`` topics
(ingest is covered elsewhere) and reads what the commands print, what runs, and what lands in
Kafka.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from detector_folders import write_detector
from mesh_cli import mesh
from polling import wait_for

from control.deploy.instances import Instance, running_instances
from control.deploy.registry import Registry
from testkit.detector_runs import produce_feed, read_topic
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

pytestmark = pytest.mark.integration

#: Fails every record once deployed (the variable is set for mesh instances only): what a
#: detector that depends on something the author's machine has and the mesh lacks looks like.
FAILS_WHEN_DEPLOYED = """
if os.environ.get("MESH_INSTANCE_STATUS"):
    raise RuntimeError("reference data service unreachable")
return []
"""
#: Cannot even start once deployed.
CRASHES_WHEN_DEPLOYED = """
if os.environ.get("MESH_INSTANCE_STATUS"):
    raise RuntimeError("config service unreachable")
"""


def feed(private_mesh, count: int, seed: int = 1) -> dict[str, int]:
    config = StreamConfig(start_time_ms=int(time.time() * 1000), count=count, seed=seed)
    topics = {t: private_mesh.topic(f"records.{t}") for t in ("transactions", "logins")}
    return produce_feed(private_mesh.settings, topics, valid_records(config))


def the_instance(private_mesh, name: str) -> Instance:
    (instance,) = running_instances(private_mesh.settings, name)
    return instance


def test_deploy_refusals_are_one_line_and_touch_nothing_that_runs(private_mesh, tmp_path):
    env = private_mesh.env
    good = write_detector(tmp_path / "big_spender", "big_spender")
    deployed = mesh("deploy", str(good), env=env)
    assert deployed.returncode == 0, deployed.stderr
    assert "dry run of" in deployed.stdout and "deployed big_spender v1.0.0" in deployed.stdout
    running = the_instance(private_mesh, "big_spender").view()
    assert running.report["state"] == "running"

    refusals = {
        "syntax error": write_detector(tmp_path / "a", "other", body="return [ctx.alert(]"),
        "dry run:": write_detector(tmp_path / "b", "other", body="return record['amout']"),
        "unknown input type 'payments'": write_detector(
            tmp_path / "c", "other", manifest_inputs=("payments",)
        ),
        "the name 'big_spender' is taken by": write_detector(tmp_path / "d", "big_spender"),
        "is already deployed": good,
    }
    for expected, folder in refusals.items():
        refused = mesh("deploy", str(folder), env=env)
        assert refused.returncode == 2, (expected, refused.stdout, refused.stderr)
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert expected in refused.stderr and refused.stderr.startswith("mesh: error: ")

    still = the_instance(private_mesh, "big_spender").view()
    assert (still.pid, still.restarts) == (running.pid, 0)
    assert still.report["revocations"] == running.report["revocations"] == 0
    assert Registry(private_mesh.settings.home).get("other") is None

    unknown = mesh("stop", "no_such_detector", env=env)
    assert unknown.returncode == 2 and "known: ingest, notifier, big_spender" in unknown.stderr


def test_a_deployed_detector_alerts_shows_in_status_and_stops(private_mesh, tmp_path):
    env = private_mesh.env
    folder = write_detector(tmp_path / "big_spender", "big_spender", replicas=2)
    assert mesh("deploy", str(folder), env=env).returncode == 0
    produced = feed(private_mesh, 3000)
    alerts = read_topic(
        private_mesh.settings, private_mesh.topic("alerts"), expect=1, timeout_s=30, idle_s=1
    )
    assert alerts, "the deployed detector raised no alert"

    status = wait_for(
        lambda: (out := mesh("status", env=env).stdout) and "lag 0 " in out and out,
        what="the group to catch up",
    )
    line = next(x for x in status.splitlines() if x.startswith("detector big_spender"))
    assert " UP " in line and "2/2" in line and "v1.0.0" in line
    replicas = [x for x in status.splitlines() if x.strip().startswith("r1-")]
    assert len(replicas) == 2 and all("cpu" in x and "MiB" in x for x in replicas)
    total = sum(int(x.split("records")[2].split()[0]) for x in replicas)
    assert total == produced["transactions"]  # each record processed by exactly one replica

    stopped = mesh("stop", "big_spender", env=env)
    assert stopped.returncode == 0 and stopped.stdout.count("stopped detector-big_spender") == 2
    after = mesh("status", env=env).stdout
    assert "detector big_spender    STOPPED 0/2" in after
    assert running_instances(private_mesh.settings, "big_spender") == []


def test_a_crashed_instance_is_restarted_and_a_dead_detector_shows_down(private_mesh, tmp_path):
    env = private_mesh.env
    assert (
        mesh("deploy", str(write_detector(tmp_path / "g", "big_spender")), env=env).returncode == 0
    )
    instance = the_instance(private_mesh, "big_spender")
    first = instance.view().pid
    os.kill(first, signal.SIGKILL)
    restarted = wait_for(
        lambda: (v := instance.view()).alive and v.pid != first and v.restarts == 1 and v,
        what="the supervisor to restart the killed runtime",
    )
    assert restarted.last_exit == "killed by SIGKILL"

    dying = write_detector(
        tmp_path / "dying", "dying", body=FAILS_WHEN_DEPLOYED, preamble="import os\n"
    )
    assert mesh("deploy", str(dying), env=env).returncode == 0  # the dry run cannot see it
    feed(private_mesh, 1500)
    status = wait_for(
        lambda: (out := mesh("status", env=env).stdout) and "detector dying" in out
        and " DOWN " in out.split("detector dying", 1)[1].splitlines()[0] and out,
        what="the failing detector to show as DOWN",
    )  # fmt: skip
    error = next(x for x in status.splitlines() if x.strip().startswith("last error:"))
    assert "exit code 3" in error and "records failed" in error
    big = next(x for x in status.splitlines() if x.startswith("detector big_spender"))
    assert " UP " in big, "one detector's failure touched another"


def _feed_in_background(private_mesh, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        seed = 100
        while not stop.is_set():
            feed(private_mesh, 500, seed=seed)
            seed += 1
            stop.wait(0.5)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("failure", "preamble", "body", "reason"),
    [
        # A crash at start is seen either way round: the runtime reports its failure, then
        # exits, then the supervisor counts the restart; the health check names what it saw.
        (
            "crashes at start",
            "import os\n" + CRASHES_WHEN_DEPLOYED,
            "return []",
            ("died", "failed: RuntimeError: config service unreachable"),
        ),
        ("fails its records", "import os\n", FAILS_WHEN_DEPLOYED, ("records",)),
    ],
)
def test_rollout_replaces_one_at_a_time_and_rolls_back_a_bad_version(
    private_mesh, tmp_path, failure, preamble, body, reason
):
    env = private_mesh.env
    source = write_detector(tmp_path / "big_spender", "big_spender", replicas=2)
    assert mesh("deploy", str(source), env=env).returncode == 0
    write_detector(source, "big_spender", version="1.1.0", replicas=2)
    stop = threading.Event()
    feeder = _feed_in_background(private_mesh, stop)
    try:
        rolled = mesh("rollout", "big_spender", "--health-seconds", "2", env=env)
        assert rolled.returncode == 0, rolled.stderr
        assert "rolled out big_spender v1.1.0 (2 replica(s))" in rolled.stdout
        assert "no record processed twice" in rolled.stdout, rolled.stdout
        lines = rolled.stdout.splitlines()
        order = [
            x.split()[0] + " " + x.split()[1] for x in lines if x.startswith(("started", "stopped"))
        ]
        assert order == [
            "started detector-big_spender-r2-0",
            "stopped detector-big_spender-r1-0",
            "started detector-big_spender-r2-1",
            "stopped detector-big_spender-r1-1",
        ]
        good = {
            i.process.name: i.view().pid
            for i in running_instances(private_mesh.settings, "big_spender")
        }
        assert sorted(good) == ["detector-big_spender-r2-0", "detector-big_spender-r2-1"]

        write_detector(
            source, "big_spender", version="2.0.0", replicas=2, body=body, preamble=preamble
        )
        bad = mesh("rollout", "big_spender", "--health-seconds", "20", env=env)
    finally:
        stop.set()
        feeder.join(60)
    assert bad.returncode == 2, (failure, bad.stdout)
    assert "failed its health check" in bad.stderr and "v1.1.0 keeps running" in bad.stderr
    assert any(r in bad.stderr for r in reason), (reason, bad.stderr)
    after = {
        i.process.name: i.view().pid
        for i in running_instances(private_mesh.settings, "big_spender")
    }
    assert after == good, "the old version's replicas were touched"
    deployment = Registry(private_mesh.settings.home).get("big_spender")
    assert deployment.current.version == "1.1.0" and "rolled back" in deployment.history[-1]


def test_deploying_into_a_mesh_without_its_topics_is_refused_before_anything_starts(
    private_mesh, tmp_path
):
    env = {**private_mesh.env, "MESH_TOPIC_PREFIX": private_mesh.prefix + "never-applied."}
    refused = mesh("deploy", str(write_detector(tmp_path / "big", "big_spender")), env=env)
    assert refused.returncode == 2
    assert f"input topic {env['MESH_TOPIC_PREFIX']}records.transactions does not exist" in (
        refused.stderr
    )
    assert "`mesh up`" in refused.stderr and refused.stderr.count("\n") == 1
    assert Registry(private_mesh.settings.home).get("big_spender") is None


def test_scale_adds_and_removes_replicas_of_one_detector_only(private_mesh, tmp_path):
    env = private_mesh.env
    for name in ("big_spender", "night_owl"):
        deployed = mesh("deploy", str(write_detector(tmp_path / name, name)), env=env)
        assert deployed.returncode == 0, deployed.stderr
    bystander = the_instance(private_mesh, "night_owl").view()

    scaled_up = mesh("scale", "big_spender", "3", env=env)
    assert scaled_up.returncode == 0, scaled_up.stderr
    assert "scaled big_spender from 1 to 3 replica(s)" in scaled_up.stdout
    replicas = running_instances(private_mesh.settings, "big_spender")
    assert [i.process.name for i in replicas] == [f"detector-big_spender-r1-{n}" for n in range(3)]

    def spread() -> bool:  # the group has settled: 8 partitions over the three, each has some
        assigned = [i.view().report.get("assigned") or [] for i in replicas]
        return all(assigned) and sum(len(a) for a in assigned) == 8

    wait_for(spread, 60, "the three replicas to share the 8 partitions")
    produced = feed(private_mesh, 3000)["transactions"]
    status = wait_for(
        lambda: (out := mesh("status", env=env).stdout) and "lag 0 " in _line(out, "big_spender")
        and out,
        what="big_spender to catch up",
    )  # fmt: skip
    assert "3/3" in _line(status, "big_spender")

    def counts() -> list[int]:  # each replica's report is rewritten every few seconds
        return [i.view().report.get("records", 0) for i in replicas]

    wait_for(lambda: sum(counts()) >= produced, 30, "the replicas' reports to count every record")
    assert all(counts()), counts()  # each replica processed records of its own partitions

    # A rollout keeps the operator's count, not the new manifest's (which says 1).
    write_detector(tmp_path / "big_spender", "big_spender", version="1.1.0", replicas=1)
    rolled = mesh("rollout", "big_spender", "--health-seconds", "0", env=env)
    assert rolled.returncode == 0, rolled.stderr
    running = running_instances(private_mesh.settings, "big_spender")
    assert [i.process.name for i in running] == [f"detector-big_spender-r2-{n}" for n in range(3)]

    scaled_down = mesh("scale", "big_spender", "1", env=env)
    assert scaled_down.returncode == 0, scaled_down.stderr
    assert scaled_down.stdout.index("stopped detector-big_spender-r2-2") < scaled_down.stdout.index(
        "stopped detector-big_spender-r2-1"
    )
    assert [i.process.name for i in running_instances(private_mesh.settings, "big_spender")] == [
        "detector-big_spender-r2-0"
    ]
    assert Registry(private_mesh.settings.home).get("big_spender").replicas == 1

    refusals = {
        ("big_spender", "0"): "`mesh stop big_spender` stops it",
        ("big_spender", "9"): "reads 8 partitions per input: more than 8 replicas would sit idle",
        ("no_such", "2"): "no detector 'no_such' is deployed",
    }
    for (name, count), expected in refusals.items():
        refused = mesh("scale", name, count, env=env)
        assert refused.returncode == 2, (expected, refused.stdout, refused.stderr)
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert expected in refused.stderr
    assert Registry(private_mesh.settings.home).get("big_spender").replicas == 1

    still = the_instance(private_mesh, "night_owl").view()  # the other detector never noticed
    assert (still.pid, still.restarts) == (bystander.pid, 0)
    assert still.report["revocations"] == 0


def _line(status: str, name: str) -> str:
    return next((x for x in status.splitlines() if x.startswith(f"detector {name} ")), "")
