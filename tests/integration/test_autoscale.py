"""Lag-driven replicas on a real broker: a slow detector gets a burst, the autoscaler (its own
supervised process, as `mesh up` starts it) raises it to ``max`` at once, and after the lag is
gone and the window has passed steps it back to ``min`` one replica at a time; every record still
gets its alert and the other detector's group never rebalances. Then `mesh autoscale` on the
other detector, with every bad input."""

from __future__ import annotations

import time

import pytest
from detector_folders import write_detector
from mesh_cli import mesh
from polling import wait_for

from control.deploy.instances import running_instances
from control.deploy.registry import Registry
from control.launch.autoscaler import autoscaler_process, start_autoscaler
from shared.avro import AvroDeserializer
from shared.topic_names import TopicNames
from testkit.detector_runs import produce_feed, read_topic
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

pytestmark = pytest.mark.integration

#: ~2 ms a record: one replica works off the burst in tens of seconds, four in a quarter of that.
SLOW_ABOVE_900 = """
time.sleep(0.002)
if record["amount"] <= 900:
    return []
return [ctx.alert("above_900", severity="LOW", score=1.0, reason="amount above 900")]
"""
AUTOSCALE = """
autoscale:
  min: 1
  max: 4
  lag_per_replica: 500
  scale_down_after_s: 4
"""


def test_a_burst_raises_replicas_to_max_the_quiet_steps_them_back_and_the_cli_bounds_them(
    private_mesh, tmp_path, monkeypatch
):
    env, settings = private_mesh.env, private_mesh.settings
    slow = write_detector(tmp_path / "slow_spender", "slow_spender", body=SLOW_ABOVE_900,
                          preamble="import time", manifest_extra=AUTOSCALE)  # fmt: skip
    for folder in (slow, write_detector(tmp_path / "night_owl", "night_owl")):
        deployed = mesh("deploy", str(folder), env=env)
        assert deployed.returncode == 0, deployed.stderr
    (bystander,) = running_instances(settings, "night_owl")
    before = bystander.view()
    registry = Registry(settings.home)

    monkeypatch.setenv("MESH_AUTOSCALE_INTERVAL_S", "1")
    start_autoscaler(settings)
    try:
        wait_for(lambda: "lag 0 / 500 per replica -> 1 (min)" in _autoscale_line(env),
                 60, "the autoscaler's first look")  # fmt: skip
        records = list(valid_records(StreamConfig(start_time_ms=int(time.time() * 1000),
                                                  count=8_000, seed=7)))  # fmt: skip
        expected = {
            r.record["record_id"]
            for r in records
            if r.record_type == "transactions" and r.record["amount"] > 900
        }
        topics = {t: private_mesh.topic(f"records.{t}") for t in ("transactions", "logins")}
        burst_at = time.monotonic()
        produce_feed(settings, topics, records)

        wait_for(lambda: registry.get("slow_spender").replicas == 4, 60, "a step up to max")
        first_step_s = time.monotonic() - burst_at
        assert "-> 4 (max)" in _autoscale_line(env) or "holding" in _autoscale_line(env)
        assert len(running_instances(settings, "slow_spender")) == 4
        wait_for(lambda: "lag 0 " in _autoscale_line(env), 120, "the burst to be worked off")
        wait_for(lambda: registry.get("slow_spender").replicas == 1, 90, "the steps back to min")
        assert len(running_instances(settings, "slow_spender")) == 1
    finally:
        autoscaler_process(settings).stop()

    # Up at once (in one step, or two if a look fell inside the burst's production), then down
    # one replica per step, each step a log line and an event of the deployment.
    counts = [
        tuple(int(n) for n in e.split("scaled from ")[1].split(" replicas")[0].split(" to "))
        for e in registry.get("slow_spender").history
        if "scaled from" in e
    ]
    top = counts.index(next(c for c in counts if c[1] == 4)) + 1
    assert all(a < b for a, b in counts[:top]) and counts[0][0] == 1, counts
    assert counts[top:] == [(4, 3), (3, 2), (2, 1)], counts
    log = autoscaler_process(settings).log_file.read_text()
    assert "-> 4 (max): " in log and f"{counts[0][0]} -> {counts[0][1]} replicas" in log
    downs = [line for line in log.splitlines() if "stepping down from" in line]
    assert [line.rsplit(": ", 1)[1] for line in downs] == [
        "4 -> 3 replicas", "3 -> 2 replicas", "2 -> 1 replicas"
    ]  # fmt: skip

    decode = AvroDeserializer("alert").decode
    names = TopicNames.of(settings)
    alerts = [decode(m.value()) for m in read_topic(settings, names.alerts, timeout_s=3)]
    mine = [a for a in alerts if a["detector"] == "slow_spender"]
    assert {a["source_record_id"] for a in mine} == expected  # no record without its alert
    assert len({a["alert_id"] for a in mine}) == len(expected)  # one id per record: dedup holds

    snapshots = AvroDeserializer("metric_snapshot").decode
    metrics = [snapshots(m.value()) for m in read_topic(settings, names.metrics, timeout_s=3)]
    steps = [m for m in metrics if m["name"] == "autoscale.steps"]
    assert {m["tags"]["direction"] for m in steps} == {"up", "down"}

    after = running_instances(settings, "night_owl")[0].view()
    assert (after.pid, after.restarts) == (before.pid, 0)  # the bystander never noticed
    assert after.report["revocations"] == 0
    print(f"burst -> first step up to max: {first_step_s:.1f} s")
    # On the same mesh (its setup is most of such a test's time): the command line.
    _mesh_autoscale_sets_shows_and_turns_off_and_bad_input_changes_nothing(env, registry)


def _autoscale_line(env: dict[str, str]) -> str:
    """The autoscale line under slow_spender in `mesh status`."""
    lines = mesh("status", env=env).stdout.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("detector slow_spender "))
    return next((x for x in lines[start + 1 :] if x.strip().startswith("autoscale ")), "")


def _mesh_autoscale_sets_shows_and_turns_off_and_bad_input_changes_nothing(
    env: dict[str, str], registry: Registry
) -> None:
    """`mesh autoscale` on night_owl (deployed without an autoscale block): every mistake is
    one line and changes nothing; set, show, narrow and off do what they say."""

    refusals = {
        ("night_owl", "--min", "2"): "night_owl is not autoscaled yet: give --max, "
                                     "--lag-per-replica too",
        ("night_owl", "--min", "3", "--max", "2", "--lag-per-replica", "5"):
            "cannot autoscale night_owl: min (3) is above max (2)",
        ("night_owl", "--min", "1", "--max", "2", "--lag-per-replica", "0"):
            "--lag-per-replica must be 1 or more, not 0",
        ("nobody", "--min", "1", "--max", "2", "--lag-per-replica", "5"):
            "no detector 'nobody' is deployed",
        ("night_owl", "--off", "--min", "1"): "--off takes no other option",
    }  # fmt: skip
    for arguments, expected in refusals.items():
        refused = mesh("autoscale", *arguments, env=env)
        assert refused.returncode == 2, (arguments, refused.stdout, refused.stderr)
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert expected in refused.stderr
        assert registry.get("night_owl").autoscale is None

    on = mesh("autoscale", "night_owl", "--min", "1", "--max", "3", "--lag-per-replica", "100",
              env=env)  # fmt: skip
    assert on.returncode == 0, on.stderr
    assert registry.get("night_owl").autoscale == {
        "min": 1, "max": 3, "lag_per_replica": 100, "scale_down_after_s": 300.0
    }  # fmt: skip
    shown = mesh("autoscale", "night_owl", env=env).stdout
    assert shown.strip() == "night_owl: autoscale min 1 max 3 lag/replica 100 down after 300 s"
    narrowed = mesh("autoscale", "night_owl", "--max", "2", env=env)  # the other bounds stay
    assert narrowed.returncode == 0 and registry.get("night_owl").autoscale["max"] == 2
    refused = mesh("scale", "night_owl", "2", env=env)
    assert refused.returncode == 2 and "night_owl is autoscaled (min 1, max 2)" in refused.stderr
    assert registry.get("night_owl").replicas == 1

    off = mesh("autoscale", "night_owl", "--off", env=env)
    assert off.returncode == 0 and "it keeps its 1 replica(s)" in off.stdout
    assert registry.get("night_owl").autoscale == {"off": True}
    assert "  autoscale off" in mesh("status", env=env).stdout.splitlines()
    scaled = mesh("scale", "night_owl", "2", env=env)
    assert scaled.returncode == 0, scaled.stderr
