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
