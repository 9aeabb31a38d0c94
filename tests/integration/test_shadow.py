"""Shadow rollouts on a real broker: a new version runs beside the live one on the same records,
`mesh shadow` reports exactly the alerts it would add (the feed's own amounts say which), its
alerts never reach the live alerts topic, and promote and abandon leave the live group's offsets
and the other detectors as they were."""

from __future__ import annotations

import json
import time

import pytest
from detector_folders import write_detector
from mesh_cli import mesh
from polling import wait_for

from control.deploy.instances import running_instances
from control.deploy.registry import Registry
from shared.avro import AvroDeserializer
from shared.kafka.inspect import consumer_groups, group_lag
from shared.topic_names import TopicNames
from testkit.detector_runs import produce_feed, read_topic
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

pytestmark = pytest.mark.integration


def above(threshold: int) -> str:
    return f"""
    if record["amount"] <= {threshold}:
        return []
    return [ctx.alert("large", severity="LOW", score=1.0, reason="amount above {threshold}")]
    """


def test_a_shadow_reports_exactly_its_extra_alerts_and_promote_and_abandon_keep_the_live_group(
    private_mesh, tmp_path
):
    env, settings = private_mesh.env, private_mesh.settings
    names = TopicNames.of(settings)
    live_v1 = write_detector(tmp_path / "v1", "big_spender", body=above(900))
    shadow_v2 = write_detector(tmp_path / "v2", "big_spender", version="1.1.0", body=above(500))
    for folder in (live_v1, write_detector(tmp_path / "night_owl", "night_owl")):
        assert mesh("deploy", str(folder), env=env).returncode == 0
    bystander = running_instances(settings, "night_owl")[0].view()
    topic = private_mesh.topic("records.transactions")
    group = names.detector_group("big_spender")

    def feed(seed: int) -> list[dict]:
        records = list(valid_records(StreamConfig(start_time_ms=int(time.time() * 1000),
                                                  count=3000, seed=seed)))  # fmt: skip
        produce_feed(settings, {"transactions": topic}, records)
        return [r.record for r in records if r.record_type == "transactions"]

    def settled(group_name: str) -> dict:
        return wait_for(
            lambda: (lag := group_lag(settings.bootstrap_servers, group_name, [topic]))
            and lag.total == 0 and lag.committed,
            60, f"{group_name} to commit everything",
        )  # fmt: skip

    feed(seed=1)
    before_shadow = settled(group)

    started = mesh("rollout", "big_spender", str(shadow_v2), "--shadow", env=env)
    assert started.returncode == 0, started.stderr
    assert "alerts to " + names.alerts_shadow in started.stdout
    assert group_lag(settings.bootstrap_servers, group, [topic]).committed == before_shadow
    shadow_group = names.shadow_group("big_spender")
    # The shadow starts exactly where the live group is: nothing of the first feed is read again.
    assert group_lag(settings.bootstrap_servers, shadow_group, [topic]).committed == before_shadow

    refusals = {
        ("rollout", "big_spender", str(shadow_v2), "--shadow"): "a shadow of big_spender "
                                                                "(v1.1.0) already runs",
        ("shadow", "night_owl"): "night_owl has no shadow",
        ("shadow", "night_owl", "--promote"): "night_owl has no shadow",
        ("shadow", "nobody", "--abandon"): "no detector 'nobody' is deployed",
        ("rollout", "nobody", str(shadow_v2), "--shadow"): "no detector 'nobody' is deployed",
    }  # fmt: skip
    for arguments, expected in refusals.items():
        refused = mesh(*arguments, env=env)
        assert refused.returncode == 2, (arguments, refused.stdout, refused.stderr)
        assert refused.stderr.count("\n") == 1 and expected in refused.stderr, refused.stderr

    transactions = feed(seed=2)
    settled(group)
    settled(shadow_group)
    report = json.loads(mesh("shadow", "big_spender", "--json", env=env).stdout)
    large = report["rules"]["large"]
    assert (large["both"], large["live_only"], large["shadow_only"]) == (
        sum(t["amount"] > 900 for t in transactions),
        0,
        sum(500 < t["amount"] <= 900 for t in transactions),
    )
    assert large["shadow_only"] > 0 and report["records"]["compared"] == len(transactions)
    assert {e["record"] for e in large["examples"]["shadow_only"]} <= {
        t["record_id"] for t in transactions if 500 < t["amount"] <= 900
    }
    text = mesh("shadow", "big_spender", env=env).stdout
    assert f"rule large: both {large['both']}, only live 0, only shadow {large['shadow_only']}" in (
        text
    )
    status = mesh("status", env=env).stdout
    assert "  shadow v1.1.0 for " in status and "1/1 replica(s)" in status

    decode = AvroDeserializer("alert").decode
    live_alerts = [decode(m.value()) for m in read_topic(settings, names.alerts, timeout_s=3)]
    assert {a["detector_version"] for a in live_alerts if a["detector"] == "big_spender"} == {
        "1.0.0"
    }  # the shadow's alerts never reach the topic the notifier reads

    at_abandon = settled(group)
    abandoned = mesh("shadow", "big_spender", "--abandon", env=env)
    assert abandoned.returncode == 0, abandoned.stderr
    assert shadow_group not in consumer_groups(settings.bootstrap_servers)
    assert group_lag(settings.bootstrap_servers, group, [topic]).committed == at_abandon
    assert Registry(settings.home).get("big_spender").shadow is None

    assert mesh("rollout", "big_spender", str(shadow_v2), "--shadow", env=env).returncode == 0
    promoted = mesh("shadow", "big_spender", "--promote", env=env)
    assert promoted.returncode == 0, promoted.stderr
    assert "promoted big_spender v1.1.0" in promoted.stdout
    assert group_lag(settings.bootstrap_servers, group, [topic]).committed == at_abandon
    assert shadow_group not in consumer_groups(settings.bootstrap_servers)
    deployment = Registry(settings.home).get("big_spender")
    assert (deployment.current.version, deployment.shadow) == ("1.1.0", None)

    after = running_instances(settings, "night_owl")[0].view()
    assert (after.pid, after.restarts) == (bystander.pid, 0)  # the other detector never noticed
    assert after.report["revocations"] == 0
