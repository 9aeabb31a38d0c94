"""Declared durability follows the cluster: 3/2 where three brokers can hold it, less on fewer."""

import pytest

from shared.errors import ConfigError
from shared.kafka.replication import DECLARED, fitted
from shared.kafka.topics import load_topics, parse_topics
from shared.settings import PROJECT_ROOT


@pytest.mark.parametrize(
    ("brokers", "expected"), [(1, (1, 1)), (2, (2, 1)), (3, (3, 2)), (5, (3, 2))]
)
def test_replication_is_capped_at_the_brokers_and_min_insync_stays_one_below(brokers, expected):
    assert fitted(DECLARED, brokers) == expected


def test_every_declared_topic_asks_for_what_the_services_own_topics_get():
    """The changelogs the services create (shared.kafka.changelog) follow DECLARED; the topic
    declaration must say the same, or a cluster would hold one kind less safely."""
    assert DECLARED == (3, 2)
    for spec in load_topics(PROJECT_ROOT / "infra" / "topics.yaml"):
        assert spec.durability == DECLARED, spec.name


def test_a_topic_on_a_cluster_carries_its_fitted_min_insync_config():
    entry = {"name": "t", "partitions": 2, "replication_factor": 3, "min_insync_replicas": 2}
    (spec,) = parse_topics({"topics": [entry]})
    single, cluster = spec.on_cluster(1), spec.on_cluster(3)
    assert (single.replication_factor, single.config["min.insync.replicas"]) == (1, "1")
    assert (cluster.replication_factor, cluster.config["min.insync.replicas"]) == (3, "2")
    assert spec.config == {}  # the declaration itself is unchanged


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"replication_factor": 1, "min_insync_replicas": 2}, "no write could succeed"),
        ({"min_insync_replicas": 0}, "`min_insync_replicas` must be a positive integer"),
        ({"config": {"min.insync.replicas": "2"}}, "not in `config`"),
    ],
)
def test_a_durability_that_cannot_work_is_one_line(entry, message):
    with pytest.raises(ConfigError, match=message):
        parse_topics({"topics": [{"name": "t", "partitions": 1, **entry}]})
