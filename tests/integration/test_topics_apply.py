"""`mesh topics apply` logic against a real broker: create, idempotence, config fix, drift."""

import time

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourceType,
)

from shared.kafka.apply import Action, apply_topics
from shared.kafka.topics import load_topics, with_prefix
from shared.settings import PROJECT_ROOT

pytestmark = pytest.mark.integration


@pytest.fixture
def declaration(unique_name):
    specs = load_topics(PROJECT_ROOT / "infra" / "topics.yaml")
    return with_prefix(specs, unique_name("t") + ".")


@pytest.fixture
def admin(kafka_bootstrap):
    return AdminClient({"bootstrap.servers": kafka_bootstrap})


def _config(admin, topic, key):
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result()[key].value


def _eventually(check, timeout=15.0):
    """Metadata and configs reach brokers shortly after the controller accepts a change."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the cluster never showed the change"
        time.sleep(0.1)


def test_apply_creates_everything_then_changes_nothing(admin, declaration):
    first = apply_topics(admin, declaration)
    assert [o.action for o in first] == [Action.CREATED] * len(declaration)
    metadata = admin.list_topics(timeout=10)
    for spec in declaration:
        assert len(metadata.topics[spec.name].partitions) == spec.partitions
        expected = spec.config.get("cleanup.policy", "delete")
        assert _config(admin, spec.name, "cleanup.policy") == expected

    second = apply_topics(admin, declaration)
    assert [o.action for o in second] == [Action.UNCHANGED] * len(declaration)


def test_on_one_broker_topics_get_one_replica_and_min_insync_one(admin, declaration):
    """The declaration asks for 3/2; the session's single broker can hold 1/1, which is what it
    gets (shared.kafka.replication), and applying again finds nothing to change."""
    apply_topics(admin, declaration)
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.brokers) == 1
    for spec in declaration:
        assert spec.durability == (3, 2)
        partitions = metadata.topics[spec.name].partitions.values()
        assert {len(p.replicas) for p in partitions} == {1}, spec.name
        assert _config(admin, spec.name, "min.insync.replicas") == "1"


def test_a_changed_config_is_put_back(admin, declaration):
    apply_topics(admin, declaration)
    target = next(s for s in declaration if "retention.ms" in s.config)
    entry = ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, target.name, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result()
    _eventually(lambda: _config(admin, target.name, "retention.ms") == "1000")

    outcomes = {o.topic: o for o in apply_topics(admin, declaration)}
    assert outcomes[target.name].action is Action.UPDATED
    assert outcomes[target.name].changes == {"retention.ms": target.config["retention.ms"]}
    _eventually(
        lambda: _config(admin, target.name, "retention.ms") == target.config["retention.ms"]
    )


def test_a_partition_count_that_differs_is_reported_not_changed(admin, declaration):
    apply_topics(admin, declaration)
    target = declaration[0]
    admin.create_partitions([NewPartitions(target.name, target.partitions + 2)])[
        target.name
    ].result()
    _eventually(
        lambda: (
            len(admin.list_topics(timeout=10).topics[target.name].partitions)
            == target.partitions + 2
        )
    )

    outcomes = {o.topic: o for o in apply_topics(admin, declaration)}
    drift = outcomes[target.name]
    assert drift.action is Action.DRIFT
    assert f"has {target.partitions + 2} partitions, declared {target.partitions}" in drift.line()
    assert "\n" not in drift.line()
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.topics[target.name].partitions) == target.partitions + 2


def test_records_produced_right_after_apply_all_land(admin, declaration, kafka_bootstrap):
    """apply returns once every partition is served (shared.kafka.served): an idempotent
    producer writing at once loses none of its first records, which it can when a partition's
    leader is announced but has not loaded it yet."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    apply_topics(admin, declaration)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    acknowledged: list[tuple[str, int]] = []
    errors: list[str] = []

    def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is None:
            acknowledged.append((message.topic(), message.partition()))
        else:
            errors.append(str(error))

    partitions = [(s.name, p) for s in declaration for p in range(s.partitions)]
    for topic, partition in partitions:
        for n in range(5):  # keyed: some declared topics are compacted
            producer.produce(topic, b"%d" % n, b"k", partition=partition, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert errors == []
    assert len(acknowledged) == 5 * len(partitions)
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "served-check"})
    try:
        ends = {
            (t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
            for t, p in partitions
        }
    finally:
        consumer.close()
    assert ends == {tp: 5 for tp in partitions}


def test_waiting_for_a_topic_that_is_not_there_names_it(admin, unique_name):
    from shared.kafka.served import wait_until_served

    missing = unique_name("missing")
    unserved = wait_until_served(admin, [missing], timeout_s=0.5)
    assert unserved == [f"{missing} (not in the metadata)"]
