"""The local 3-node KRaft cluster as a user meets it: `mesh broker start --brokers 3`, the topics
applied at 3/2, drift on a topic with fewer replicas, the bad inputs, and one node stopped and
brought back while a detector whose alerts partition, a notifier whose notifications partition
and the ingest job whose raw partition lose their leader hold back only those (degrade, never
stop). One cluster for the module (it
starts in ~10 s); the mesh's services are not started here: the whole mesh on a cluster, under a
broker loss, is chaos case 16 (test_chaos_short), and with the alerts at one replica case 20
(`make chaos`)."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from mesh_cli import mesh

from chaos.replay_scope import Routing, handover_marks, replay_verdict, routing_of
from control.launch.ingest import ingest_process, start_ingest
from control.supervised_service import supervised_child
from shared.avro import AvroDeserializer
from shared.json_files import read_json
from shared.kafka.inspect import group_lag
from shared.kafka.partitioner import partition_for
from shared.service_files import ingest_status_file
from shared.settings import Settings
from shared.topic_names import TopicNames
from testkit.detector_runs import DetectorProcess, produce_feed, read_topic
from testkit.notifier_runs import NotifierProcess, alert, produce_alerts
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records
from tools.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    home = tmp_path_factory.mktemp("cluster") / "home"
    env = {"MESH_HOME": str(home), "MESH_BROKER_PORT": "0"}
    started = mesh("broker", "start", "--brokers", "3", env=env, timeout=180)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert "started Kafka cluster of 3 KRaft nodes" in started.stdout, started.stdout
        yield env
    finally:
        mesh("broker", "stop", env=env, timeout=120)


def _bootstrap(env: dict[str, str]) -> str:
    return (Path(env["MESH_HOME"]) / "kafka" / "bootstrap").read_text().strip()


def _produce(env: dict[str, str], topic: str, acks: str) -> int:
    """200 records; how many the cluster acknowledged."""
    acknowledged = []
    producer = Producer({"bootstrap.servers": _bootstrap(env), "acks": acks})
    for n in range(200):
        producer.produce(
            topic, key=str(n).encode(), value=b"x",
            on_delivery=lambda error, _: acknowledged.append(error is None),
        )  # fmt: skip
    producer.flush(30)
    return sum(acknowledged)


def _eventually(check, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the cluster never showed the change"
        time.sleep(0.5)


def test_topics_get_three_replicas_and_min_insync_two_and_so_do_the_brokers_own(cluster):
    applied = mesh("topics", "apply", env=cluster)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "warning" not in applied.stdout
    bootstrap = _bootstrap(cluster)
    assert len(bootstrap.split(",")) == 3
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(timeout=10)
    assert sorted(metadata.brokers) == [1, 2, 3]
    declared = [t for t in metadata.topics if not t.startswith("__")]
    assert "alerts" in declared and "raw.transactions" in declared
    for name in declared:
        assert {len(p.replicas) for p in metadata.topics[name].partitions.values()} == {3}, name
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in declared]
    for resource, future in admin.describe_configs(resources).items():
        assert future.result()["min.insync.replicas"].value == "2", resource.name

    # The offsets topic is made on a group's first commit: with the cluster's replication. While
    # its 50 partitions get leaders the coordinator answers "not coordinator" (seen once, on a
    # loaded machine): a client tries again, as librdkafka's own commits do.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cluster-test"})
    retriable = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                 KafkaError.COORDINATOR_NOT_AVAILABLE}  # fmt: skip

    def committed() -> bool:
        try:
            consumer.commit(offsets=[TopicPartition("alerts", 0, 0)], asynchronous=False)
        except KafkaException as error:
            if error.args[0].code() not in retriable:
                raise
            return False
        return True

    try:
        _eventually(committed)
    finally:
        consumer.close()
    offsets = admin.list_topics(timeout=10).topics["__consumer_offsets"].partitions.values()
    assert {len(p.replicas) for p in offsets} == {3}


def test_a_declared_topic_with_fewer_replicas_is_drift(cluster, tmp_path):
    prefix = f"drift{int(time.time())}."
    admin = AdminClient({"bootstrap.servers": _bootstrap(cluster)})
    admin.create_topics([NewTopic(f"{prefix}alerts", 8, 1)])[f"{prefix}alerts"].result()
    applied = mesh("topics", "apply", env={**cluster, "MESH_TOPIC_PREFIX": prefix})
    assert applied.returncode == 1, applied.stdout
    assert f"drift     {prefix}alerts: has replication 1, declared 3" in applied.stdout
    assert "has replication 1, declared 3 on this cluster of 3 brokers" in applied.stdout
    assert "mesh topics apply --raise-replication" in applied.stdout

    # Asked to, apply raises it: every partition gets three replicas, all in sync, with the
    # records it had, and min.insync.replicas 2 (the cluster's default here) holds for acks=all.
    assert _produce(cluster, f"{prefix}alerts", acks="1") == 200
    raised = mesh("topics", "apply", "--raise-replication",
                  env={**cluster, "MESH_TOPIC_PREFIX": prefix})  # fmt: skip
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert (f"updated   {prefix}alerts: replication 1 -> 3 (8 partitions reassigned)"
            in raised.stdout), raised.stdout  # fmt: skip
    partitions = admin.list_topics(timeout=10).topics[f"{prefix}alerts"].partitions.values()
    assert {(len(p.replicas), len(p.isrs)) for p in partitions} == {(3, 3)}
    assert set(Counter(r for p in partitions for r in p.replicas).values()) == {8}
    resource = ConfigResource(ResourceType.TOPIC, f"{prefix}alerts")
    config = admin.describe_configs([resource])[resource].result()
    assert config["min.insync.replicas"].value == "2"
    assert _produce(cluster, f"{prefix}alerts", acks="all") == 200
    again = mesh("topics", "apply", env={**cluster, "MESH_TOPIC_PREFIX": prefix})
    assert again.returncode == 0 and f"unchanged {prefix}alerts" in again.stdout, again.stdout


def test_bad_sizes_get_one_line_each(cluster, tmp_path):
    fresh = {"MESH_HOME": str(tmp_path / "fresh"), "MESH_BROKER_PORT": "0"}
    zero = mesh("up", "--brokers", "0", env=fresh)
    assert zero.returncode == 2 and "give 1 to 9 nodes, not '0'" in zero.stderr, zero.stderr
    variable = mesh("broker", "start", env={**fresh, "MESH_BROKERS": "0"})
    assert variable.returncode != 0 and len(variable.stderr.strip().splitlines()) == 1
    assert "MESH_BROKERS=0" in variable.stderr and "Traceback" not in variable.stderr
    other_size = mesh("broker", "start", "--brokers", "5", env=cluster)
    assert other_size.returncode != 0, other_size.stdout
    assert "was made with 3 nodes" in other_size.stderr, other_size.stderr
    assert not (Path(fresh["MESH_HOME"]) / "kafka").exists()
    assert Settings.from_env({"MESH_BROKERS": "3"}).brokers == 3


def _uncommitted(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """Per partition of ``topic``, records ``group`` has not committed."""
    lags = group_lag(bootstrap, group, [topic]).partitions
    return {partition: lag for (_, partition), lag in lags.items()}


class _HeldDetector:
    """A detector whose alerts are at one replica, partitions 1 and 3 on node 3: with node 3
    stopped it holds back input partitions 1 and 3 only (status file, uncommitted), alerts of
    partitions 0 and 2 arrive and are committed, the process never exits; node 3 back, 1 and 3
    are taken back and their alerts arrive too. With the default delivery timeout (30 s) the
    first commit finds a partition without a leader after 5 s, purges what is queued and holds
    back every partition whose alerts partition is lost (parking.foreseen), so this also shows
    the purge leaves the idempotent producers working."""

    def __init__(self, bootstrap: str, tmp_path: Path) -> None:
        self.bootstrap, self.tmp_path = bootstrap, tmp_path
        prefix = f"held{int(time.time())}."
        self.records, self.alerts = f"{prefix}records.transactions", f"{prefix}alerts"
        self.group, self.prefix = f"{prefix}detector.large_amount", prefix
        admin = AdminClient({"bootstrap.servers": bootstrap})
        created = admin.create_topics([
            NewTopic(self.records, 4, 3), NewTopic(f"{prefix}detectors.dlq", 4, 3),
            NewTopic(f"{prefix}metrics", 4, 3),
            NewTopic(self.alerts, 4, replica_assignment=[[1], [3], [2], [3]]),
        ])  # fmt: skip
        for future in created.values():
            future.result(30)
        feed = list(valid_records(StreamConfig(
            start_time_ms=1_700_000_000_000, count=3_000, customers=3_000, event_rate=50.0,
            fraud_share=0.03, types=("transactions",))))  # fmt: skip
        self.planted: dict[int, set[str]] = {p: set() for p in range(4)}
        for item in feed:
            if any(a.detector == "large_amount" for a in item.meta.alerts):
                self.planted[partition_for(item.record["customer_id"].encode(), 4)].add(
                    item.record["record_id"]
                )
        assert all(len(ids) >= 3 for ids in self.planted.values()), self.planted
        self.settings = Settings.from_env({"MESH_BOOTSTRAP_SERVERS": bootstrap})
        produce_feed(self.settings, {"transactions": self.records}, feed)
        self.status = tmp_path / "detector-status.json"
        self._decode = AvroDeserializer("alert").decode

    def start(self) -> DetectorProcess:
        self.instance = DetectorProcess(
            self.settings, "detectors/large_amount",
            ["--topic-prefix", self.prefix, "--status-file", str(self.status)],
            self.tmp_path / "large_amount.log",
        )  # fmt: skip
        return self.instance

    def _alerted(self) -> set[str]:
        found = read_topic(self.settings, self.alerts, expect=10_000, timeout_s=5, idle_s=1)
        return {self._decode(m.value())["source_record_id"] for m in found}

    def holds_back_two(self) -> None:
        held = self.instance.wait_for_status(self.status, lambda s: bool(s["waiting"]), 60)
        assert held["waiting"] == [
            f"{self.records}[{p}] waits for {self.alerts}[{p}]" for p in (1, 3)
        ], held
        others = self.planted[0] | self.planted[2]

        def others_done() -> bool:
            assert self.instance.process.poll() is None, self.instance.log_text()
            lag = _uncommitted(self.bootstrap, self.group, self.records)
            return others <= self._alerted() and [p for p, n in lag.items() if n] == [1, 3]

        _eventually(others_done, timeout=60)

    def caught_up(self) -> None:
        def all_done() -> bool:
            lag = _uncommitted(self.bootstrap, self.group, self.records)
            return not any(lag.values()) and self.planted[1] | self.planted[3] <= self._alerted()

        _eventually(all_done, timeout=90)
        after = self.instance.wait_for_status(self.status, lambda s: not s["waiting"])
        assert after["state"] == "running"
        assert self.instance.terminate() == 0
        log = self.instance.log_text()
        assert "partition 3 waits for" in log and "taken back" in log, log[-3000:]


NOTIFY_THE_RECEIVER = """
channels:
  team: {type: webhook, url: RECEIVER/ok, timeout_s: 2, backoff_initial_s: 0.1, backoff_max_s: 0.5}
rules:
  - channels: [team]
"""


class _HeldNotifier:
    """A notifier whose notifications are at one replica, partition 1's on node 3: with node 3
    stopped it holds back alerts partitions 1 and 5 (their records go to notifications[1 % 4]
    and [5 % 4]), delivers the alerts of the six others to a real webhook and never exits; node 3
    back, 1 and 5 are restored from the changelog and delivered, every alert exactly once at the
    receiver."""

    def __init__(self, bootstrap: str, tmp_path: Path, receiver: WebhookReceiver) -> None:
        prefix = f"told{int(time.time())}."
        self.tmp_path = tmp_path
        self.alerts, self.notifications = f"{prefix}alerts", f"{prefix}notifications"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        created = admin.create_topics([
            NewTopic(self.alerts, 8, 3), NewTopic(f"{prefix}notifications.dlq", 4, 3),
            NewTopic(f"{prefix}notifier.changelog", 8, 3, config={"cleanup.policy": "compact"}),
            NewTopic(f"{prefix}metrics", 4, 3),  # else its last snapshots wait 10 s at the stop
            NewTopic(self.notifications, 4, replica_assignment=[[1], [3], [2], [1]]),
        ])  # fmt: skip
        for future in created.values():
            future.result(30)
        customers: dict[int, list[str]] = {p: [] for p in range(8)}
        for n in range(1000):
            owned = customers[partition_for(f"cust_{n}".encode(), 8)]
            if len(owned) < 2:
                owned.append(f"cust_{n}")
        self.sent = [
            alert(f"a{p}-{i}", customer=customer)
            for p, owned in customers.items()
            for i, customer in enumerate(owned)
        ]
        self.held = {f"a{p}-{i}" for p in (1, 5) for i in range(2)}
        self.env = {"MESH_BOOTSTRAP_SERVERS": bootstrap, "MESH_TOPIC_PREFIX": prefix,
                    "MESH_HOME": str(tmp_path / "home")}  # fmt: skip
        produce_alerts(Settings.from_env(self.env), self.alerts, self.sent)
        self.receiver = receiver
        self.rules = tmp_path / "rules.yaml"
        self.rules.write_text(NOTIFY_THE_RECEIVER.replace("RECEIVER", receiver.url("")))

    def start(self) -> NotifierProcess:
        self.process = NotifierProcess(self.env, self.rules, self.tmp_path / "notifier.log",
                                       self.tmp_path / "notifier-status.json")  # fmt: skip
        return self.process

    def holds_back_two(self) -> None:
        expected = {f"{self.alerts}[{p}] waits for {self.notifications}[1]" for p in (1, 5)}
        self.process.status(lambda s: set(s["waiting"]) == expected
                            and sum(s["delivered"].values()) == 12)  # fmt: skip
        sent = {record["alert_id"] for record in self.sent}
        assert set(self.receiver.received.tries) == sent - self.held

    def caught_up(self) -> None:
        done = self.process.status(lambda s: sum(s["delivered"].values()) == 16
                                   and not s["waiting"], timeout_s=90)  # fmt: skip
        assert done["state"] == "running" and done["partitions"] == list(range(8))
        assert self.process.stop() == 0, self.process.log_text()[-3000:]
        tries = dict(self.receiver.received.tries)
        assert tries == {record["alert_id"]: 1 for record in self.sent}, tries
        log = self.process.log_text()
        assert "alerts partition 1 waits" in log and "taken back" in log, log[-3000:]


class _HeldIngest:
    """The real ingest job (supervised, real-time routing) on a raw topic at one replica whose
    partition 1 is on node 3 alone, started with node 3 already stopped: it neither exits nor
    restarts; routing hands over without raw partition 1 (its status says it holds it) and
    dead-letters the records of partitions 0, 2 and 3; node 3 back, it hands over again and
    routes partition 1's from its start. Every raw record ends up routed, and none twice but
    what a handover's stopped batch may repeat (its mark, chaos/replay_scope.py)."""

    PER_PARTITION = 50

    def __init__(self, bootstrap: str, tmp_path: Path) -> None:
        prefix = f"routed{int(time.time())}."
        self.names = TopicNames(prefix)
        self.raw = self.names.raw("transactions")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        created = admin.create_topics([
            NewTopic(self.raw, 4, replica_assignment=[[1], [3], [2], [1]]),
            NewTopic(self.names.invalid, 4, 3), NewTopic(self.names.records("transactions"), 4, 3),
            NewTopic(self.names.windows, 2, 3), NewTopic(self.names.metrics, 2, 3),
        ])  # fmt: skip
        for future in created.values():
            future.result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for partition in range(4):
            for n in range(self.PER_PARTITION):
                producer.produce(self.raw, f"not json {n}".encode(), partition=partition)
        assert producer.flush(30) == 0
        self.settings = replace(Settings.from_env(), bootstrap_servers=bootstrap,
                                home=tmp_path / "ingest-home", topic_prefix=prefix)  # fmt: skip
        self.process = ingest_process(self.settings)

    def start(self) -> None:
        _, started = start_ingest(self.settings, {"MESH_INGEST_CHECKPOINT_INTERVAL": "5 seconds"})
        assert started, self.process.log_file.read_text()[-3000:]

    def _routed(self) -> list[Routing]:
        decode = AvroDeserializer("invalid_record")
        found = read_topic(self.settings, self.names.invalid, expect=10_000, timeout_s=5,
                           idle_s=1)  # fmt: skip
        return [routing_of(message, self.names.invalid, decode) for message in found]

    def _sources(self, partitions: tuple[int, ...]) -> set[str]:
        return {f"{self.raw}:{p}:{n}" for p in partitions for n in range(self.PER_PARTITION)}

    def holds_back_one(self) -> None:
        def holds() -> bool:
            waiting = (read_json(ingest_status_file(self.settings.home)) or {}).get("waiting")
            return f"ingest-routing holds {self.raw}[1] (no leader)" in "".join(waiting or [])

        _eventually(holds, timeout=150)
        _eventually(lambda: {r.source for r in self._routed()} == self._sources((0, 2, 3)), 60)
        self._never_restarted()

    def caught_up(self) -> None:
        _eventually(lambda: {r.source for r in self._routed()} == self._sources((0, 1, 2, 3)), 90)
        routings = self._routed()
        marks = handover_marks(self.settings.home / "ingest" / "checkpoints")
        assert len(marks) == 2, marks  # the partition left out, then taken back
        allowed = 0
        for mark in marks:
            verdict = replay_verdict(mark, routings)
            assert verdict.failures == [], verdict
            allowed += verdict.replayable
        assert len(routings) - len(self._sources((0, 1, 2, 3))) <= allowed
        log = self.process.log_file.read_text()
        assert "read again from where they were left" in log, log[-3000:]
        self._never_restarted()
        self.process.stop()

    def _never_restarted(self) -> None:
        child = supervised_child(self.process)
        assert child is not None and child.restarts == 0 and child.state == "running", child


def _node_3_is_lost(cluster: dict[str, str], topic: str) -> None:
    """What an operator sees with node 3 stopped; records still go into ``topic`` (three
    replicas) with acks=all."""
    status = mesh("broker", "status", env=cluster)
    assert status.returncode == 1
    assert "Kafka node 3 of 3" in status.stdout and "NOT RUNNING" in status.stdout, status.stdout
    # Two in-sync replicas of three are enough for a declared topic.
    producer = Producer({"bootstrap.servers": _bootstrap(cluster), "acks": "all",
                         "enable.idempotence": True})  # fmt: skip
    errors: list[object] = []
    for n in range(100):
        producer.produce(topic, str(n).encode(), on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(30) == 0
    assert errors == [None] * 100
    whole = mesh("status", env=cluster)
    assert "kafka    PART   2 of 3 nodes answer" in whole.stdout, whole.stdout
    assert "node 3 LOST" in whole.stdout and "mesh broker start --node 3" in whole.stdout


def test_a_stopped_node_is_shown_lost_and_what_needs_it_alone_is_held_back(cluster, tmp_path):
    """Node 3 stopped and started again, once: `mesh broker status` and `mesh status` show it
    lost and records still go in at acks=all; and three subjects on their own topics, a detector
    whose alerts partitions 1 and 3 are on node 3 alone, a notifier whose notifications
    partition 1 is and the ingest job whose raw partition 1 is (see each class): none exits,
    each holds back only the partitions that need a lost one and takes them back when the node
    returns; then the cluster is whole again.
    One outage for all of it: a node's stop and start are most of the time (make test's 40
    minutes).
    docs/reliability.md, "A partition without a leader"."""
    bootstrap = _bootstrap(cluster)
    with WebhookReceiver() as receiver, contextlib.ExitStack() as running:
        ingest = _HeldIngest(bootstrap, tmp_path)
        detector = _HeldDetector(bootstrap, tmp_path)
        notifier = _HeldNotifier(bootstrap, tmp_path, receiver)
        acks = f"acks{int(time.time())}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(acks, 1, 3, config={"min.insync.replicas": "2"})])[
            acks
        ].result(30)
        stopped = mesh("broker", "stop", "--node", "3", env=cluster)
        assert stopped.returncode == 0 and "stopped Kafka node 3" in stopped.stdout, stopped.stdout
        try:
            running.callback(ingest.process.stop)
            ingest.start()
            running.enter_context(detector.start())
            running.callback(notifier.start().stop)
            _node_3_is_lost(cluster, acks)
            detector.holds_back_two()
            notifier.holds_back_two()
            ingest.holds_back_one()
            back = mesh("broker", "start", "--node", "3", env=cluster, timeout=120)
            assert back.returncode == 0 and "started Kafka node 3" in back.stdout, back.stdout
            detector.caught_up()
            notifier.caught_up()
            ingest.caught_up()
        finally:
            mesh("broker", "start", "--node", "3", env=cluster, timeout=120)

    def whole_again() -> bool:
        return "kafka    UP     3 of 3 nodes answer" in mesh("status", env=cluster).stdout

    _eventually(whole_again, timeout=60)
