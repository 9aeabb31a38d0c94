"""Deploying, rolling out and stopping one detector leaves the others alone (issue 5, point 5).

With ``large_amount`` and ``velocity`` (2 replicas) processing a steady feed, the test runs three
operations on ``new_country`` through the real CLI: deploy, rollout to a new version, stop. Around
each it takes, for the two bystanders, the broker's group generation (read from
``__consumer_offsets``), every replica's own rebalance, assignment and revocation counts, their
pids, and their records/s in the seconds before and during the operation.

Asserted: generations, rebalance counts, assignments, revocations and pids unchanged (so no
pause can have happened), ``new_country`` alerts after its deploy, and, once the feed ends, every
bystander processed every record exactly once and ``new_country`` processed none twice across its
rollout. Throughput ratios (during / before) are printed, not asserted: timing thresholds belong in
the benchmark (`make bench`, scenario ``deploy``), not in a test on a shared 2-core machine.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from mesh_cli import mesh
from polling import wait_for

from control.deploy.instances import Instance, running_instances
from shared.kafka.inspect import group_lag
from shared.settings import PROJECT_ROOT
from testkit.detector_runs import PacedFeed, read_topic
from testkit.group_generations import group_generations

pytestmark = pytest.mark.integration

BYSTANDERS = ("large_amount", "velocity")
#: Replicas per bystander (their manifests) and partitions of records.transactions (topics.yaml).
REPLICAS = {"large_amount": 1, "velocity": 2}
PARTITIONS = 8
#: Records per second the feed offers: well within what the detectors sustain on 2 cores.
FEED_RATE = 600
#: Seconds of steady state measured before an operation.
BEFORE_S = 5.0
#: Seconds measured after an operation started, at least (the operation may take longer).
DURING_S = 5.0


@dataclass(frozen=True)
class Snapshot:
    at: float
    generations: dict[str, int]
    #: detector -> process name -> the replica's report and pid
    replicas: dict[str, dict[str, tuple[int | None, dict]]]

    def records(self, detector: str) -> int:
        return sum(int(report.get("records", 0)) for _, report in self.replicas[detector].values())

    def membership(self, detector: str) -> dict[str, tuple]:
        """What a rebalance would change: pid, rebalance/assignment/revocation counts."""
        return {
            name: (pid, r.get("rebalances"), r.get("assignments"), r.get("revocations"))
            for name, (pid, r) in self.replicas[detector].items()
        }


def snapshot(private_mesh) -> Snapshot:
    groups = [f"{private_mesh.prefix}detector.{name}" for name in BYSTANDERS]
    generations = group_generations(private_mesh.settings.bootstrap_servers, groups)
    replicas = {}
    for name in BYSTANDERS:
        views = [i.view() for i in running_instances(private_mesh.settings, name)]
        replicas[name] = {v.process: (v.pid, v.report) for v in views}
    return Snapshot(time.monotonic(), generations, replicas)


def settled(private_mesh) -> bool:
    """Every bystander replica runs with partitions, every record partition is owned, records
    flow, and the groups' generations stay the same for 3 s: the steady state to measure from
    (velocity's two replicas join one after the other, which takes its group a few rebalances)."""
    first = snapshot(private_mesh)
    for name in BYSTANDERS:
        reports = [report for _, report in first.replicas[name].values()]
        owned = sum(len(report.get("assigned", ())) for report in reports)
        if len(reports) != REPLICAS[name] or owned != PARTITIONS or first.records(name) == 0:
            return False
    time.sleep(3)
    return snapshot(private_mesh).generations == first.generations


def observe(private_mesh, label: str, *args: str) -> str:
    """Run ``mesh ARGS`` in the steady state; assert the bystanders did not notice; its output."""
    first = snapshot(private_mesh)
    time.sleep(BEFORE_S)
    before = snapshot(private_mesh)
    result = mesh(*args, env=private_mesh.env, timeout=300)
    assert result.returncode == 0, f"{label}: {result.stdout}{result.stderr}"
    remaining = DURING_S - (time.monotonic() - before.at)
    time.sleep(max(1.0, remaining))
    during = snapshot(private_mesh)
    for name in BYSTANDERS:
        group = f"{private_mesh.prefix}detector.{name}"
        assert during.generations[group] == first.generations[group], f"{label}: {group} rebalanced"
        assert during.membership(name) == first.membership(name), f"{label}: {name} was touched"
        rate_before = (before.records(name) - first.records(name)) / (before.at - first.at)
        rate_during = (during.records(name) - before.records(name)) / (during.at - before.at)
        print(
            f"{label}: {name} {rate_before:.0f} records/s before, {rate_during:.0f} during "
            f"(ratio {rate_during / rate_before if rate_before else float('nan'):.2f}), "
            f"generation {first.generations[group]} unchanged"
        )
    return result.stdout


def new_version(tmp_path: Path) -> Path:
    """new_country 1.1.0: the reference code with its version bumped, as an author would."""
    folder = tmp_path / "new_country"
    shutil.copytree(
        PROJECT_ROOT / "detectors" / "new_country",
        folder,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for file in ("manifest.yaml", "detector.py"):
        path = folder / file
        text = path.read_text()
        assert "1.0.0" in text
        path.write_text(text.replace("1.0.0", "1.1.0"))
    return folder


def test_deploy_rollout_and_stop_do_not_disturb_the_other_detectors(private_mesh, tmp_path):
    env = private_mesh.env
    for name in BYSTANDERS:
        deployed = mesh("deploy", str(PROJECT_ROOT / "detectors" / name), env=env, timeout=300)
        assert deployed.returncode == 0, deployed.stderr
    with PacedFeed(private_mesh.settings, FEED_RATE, customers=60_000) as steady:
        wait_for(lambda: settled(private_mesh), 90, "both bystanders' groups to settle")

        observe(private_mesh, "deploy", "deploy", str(PROJECT_ROOT / "detectors" / "new_country"))
        alerts_topic = private_mesh.topic("alerts")
        wait_for(
            lambda: any(  # Avro strings are plain UTF-8 in the encoded alert
                b"new_country" in (m.value() or b"")
                for m in read_topic(private_mesh.settings, alerts_topic, timeout_s=5, idle_s=1)
            ),
            60,
            "new_country's first alert",
        )

        rolled = observe(
            private_mesh,
            "rollout",
            "rollout",
            "new_country",
            str(new_version(tmp_path)),
            "--health-seconds",
            "3",
        )
        assert "rolled out new_country v1.1.0" in rolled

        observe(private_mesh, "stop", "stop", "new_country")
        assert running_instances(private_mesh.settings, "new_country") == []
    produced = steady.produced

    bootstrap = private_mesh.settings.bootstrap_servers
    transactions = [private_mesh.topic("records.transactions")]
    for name in BYSTANDERS:
        group = f"{private_mesh.prefix}detector.{name}"
        wait_for(
            lambda g=group: group_lag(bootstrap, g, transactions).total == 0,
            60,
            f"{name} to catch up",
        )
        wait_for(
            lambda n=name: snapshot(private_mesh).records(n) == produced["transactions"],
            30,
            f"{name}'s reports to show every record",
        )
        # Exactly the produced count, over the replicas' own counters: none lost, none repeated.

    # new_country ran as v1.0.0 then v1.1.0: what its replicas processed, against its commits.
    seen = sum(
        int(Instance(private_mesh.settings, "new_country", seq, 0).view().report.get("records", 0))
        for seq in (1, 2)
    )
    inputs = [private_mesh.topic("records.transactions"), private_mesh.topic("records.logins")]
    committed = group_lag(bootstrap, f"{private_mesh.prefix}detector.new_country", inputs).committed
    unique = sum(offset or 0 for offset in committed.values())
    print(
        f"new_country: {seen} records processed over two versions, {unique} committed, "
        f"{seen - unique} processed twice"
    )
    assert seen == unique
