"""Detector replicas are static group members (issue 34, shared/kafka/static_membership.py): a
replica killed with SIGKILL and restarted by its supervisor takes its partitions back without a
rebalance, and every record is alerted; a replica that stops for good (`mesh scale` down) leaves
the group at once, although static members send no LeaveGroup of their own."""

from __future__ import annotations

import contextlib
import time

import pytest
from confluent_kafka import Consumer, KafkaException
from detector_folders import write_detector
from mesh_cli import mesh
from polling import wait_for

from control.deploy.instances import running_instances
from shared.avro import AvroDeserializer
from shared.kafka.inspect import group_members
from shared.topic_names import TopicNames
from testkit.detector_runs import produce_feed, read_topic
from testkit.group_generations import group_generations
from testkit.service_kill import kill_service
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

pytestmark = pytest.mark.integration


def test_a_killed_replica_resumes_without_a_rebalance_and_a_scaled_down_one_leaves_at_once(
    private_mesh, tmp_path
):
    env, settings = private_mesh.env, private_mesh.settings
    names = TopicNames.of(settings)
    group = names.detector_group("big_spender")
    folder = write_detector(tmp_path / "big_spender", "big_spender", replicas=2)
    assert mesh("deploy", str(folder), env=env).returncode == 0
    replicas = {i.name for i in running_instances(settings, "big_spender")}
    wait_for(lambda: group_members(settings.bootstrap_servers, group) == replicas, 60,
             f"both replicas in {group} under their names")  # fmt: skip
    topic = private_mesh.topic("records.transactions")
    alerts = private_mesh.topic("alerts")
    decode = AvroDeserializer("alert").decode

    def feed(seed: int) -> set[str]:
        """Records of the big spender's kind; the ids of those it must alert on (above 900)."""
        start = int(time.time() * 1000)
        records = list(valid_records(StreamConfig(start_time_ms=start, count=600, seed=seed)))
        produce_feed(settings, {"transactions": topic}, records)
        return {r.record["record_id"] for r in records
                if r.record_type == "transactions" and r.record["amount"] > 900}  # fmt: skip

    def alerted() -> set[str]:
        read = read_topic(settings, alerts, timeout_s=3)
        return {decode(m.value())["source_record_id"] for m in read}

    first = feed(seed=1)
    wait_for(lambda: first <= alerted(), 60, "the first feed's alerts")
    # A cooperative rebalance takes two rounds (the second one hands the revoked partitions to
    # the newcomer, in a new generation): the group is settled once both replicas have some.
    wait_for(lambda: sorted(len(i.view().report.get("assigned", []))
                            for i in running_instances(settings, "big_spender")) == [4, 4],
             60, "each replica to hold its half of the partitions")  # fmt: skip
    before = wait_for(lambda: group_generations(settings.bootstrap_servers, [group]), 30,
                      "the group's generation")[group]  # fmt: skip

    victim = running_instances(settings, "big_spender")[0]
    assert kill_service(victim.process), "no replica process was killed"
    killed = time.monotonic()
    second = feed(seed=2)
    wait_for(lambda: second <= alerted(), 60, "the second feed's alerts after the kill")
    back_in = time.monotonic() - killed
    wait_for(lambda: victim.view().restarts == 1, 30, "the supervisor's restart")
    after = group_generations(settings.bootstrap_servers, [group])[group]
    print(f"kill -9 -> every record alerted again: {back_in:.1f} s")  # docs figure
    assert after == before, "the restart rebalanced the group: the replica was not static"

    assert mesh("scale", "big_spender", "1", env=env).returncode == 0
    (kept,) = running_instances(settings, "big_spender")
    assert group_members(settings.bootstrap_servers, group) == {kept.name}, (
        "the replica scaled away stayed in the group"
    )
    third = feed(seed=3)
    wait_for(lambda: third <= alerted(), 60, "the third feed's alerts on one replica")


def test_a_fenced_replica_joins_again_by_itself(private_mesh, tmp_path):
    """A static member fenced by another with its name (what librdkafka does to itself after
    its session expired while the broker was away: librdkafka #3437) has a fatal, unusable
    consumer; the runtime joins again with a new one, without a restart, and misses nothing."""
    env, settings = private_mesh.env, private_mesh.settings
    group = TopicNames.of(settings).detector_group("big_spender")
    folder = write_detector(tmp_path / "big_spender", "big_spender")
    assert mesh("deploy", str(folder), env=env).returncode == 0
    (replica,) = running_instances(settings, "big_spender")
    topic = private_mesh.topic("records.transactions")
    wait_for(lambda: group_members(settings.bootstrap_servers, group) == {replica.name}, 60,
             "the replica in its group")  # fmt: skip

    impostor = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": group,
                         "group.instance.id": replica.name, "session.timeout.ms": 6000,
                         "partition.assignment.strategy": "cooperative-sticky",
                         "enable.auto.commit": False, "log_level": 0})  # fmt: skip
    try:
        impostor.subscribe([topic])
        wait_for(lambda: impostor.poll(0.2) is None and impostor.assignment(), 60,
                 "the impostor to take the replica's place")  # fmt: skip
    finally:
        with contextlib.suppress(KafkaException):
            impostor.close()
    log = replica.process.log_file
    wait_for(lambda: "joining again" in log.read_text(errors="replace"), 60,
             "the fenced replica to join again")  # fmt: skip

    start = int(time.time() * 1000)
    records = list(valid_records(StreamConfig(start_time_ms=start, count=600, seed=7)))
    produce_feed(settings, {"transactions": topic}, records)
    expected = {r.record["record_id"] for r in records
                if r.record_type == "transactions" and r.record["amount"] > 900}  # fmt: skip
    decode = AvroDeserializer("alert").decode
    alerts = private_mesh.topic("alerts")
    wait_for(lambda: expected <= {decode(m.value())["source_record_id"]
                                  for m in read_topic(settings, alerts, timeout_s=3)},
             90, "the feed's alerts from the replica that joined again")  # fmt: skip
    assert replica.view().restarts == 0, "the replica was restarted instead of joining again"
