import pytest

from shared.errors import ConfigError
from shared.kafka.topics import load_topics, parse_topics, with_prefix
from shared.settings import PROJECT_ROOT

ARCHITECTURE_TOPICS = {
    "raw.transactions",
    "raw.logins",
    "records.transactions",
    "records.logins",
    "records.invalid",
    "alerts",
    "detectors.dlq",
    "metrics",
    "metrics.windows",
    "notifications",
}


@pytest.fixture
def declared():
    return {s.name: s for s in load_topics(PROJECT_ROOT / "infra" / "topics.yaml")}


def test_every_architecture_topic_is_declared(declared):
    assert set(declared) >= ARCHITECTURE_TOPICS


def test_only_the_table_topics_are_compacted(declared):
    compacted = {name for name, spec in declared.items() if spec.compacted}
    assert compacted == {"metrics", "metrics.windows", "notifications"}


def test_validated_record_topics_are_co_partitioned(declared):
    groups = {declared["records.transactions"].copartition, declared["records.logins"].copartition}
    assert len(groups) == 1 and None not in groups
    assert declared["records.transactions"].partitions == declared["records.logins"].partitions


def test_with_prefix_renames_without_changing_anything_else(declared):
    renamed = with_prefix(list(declared.values()), "t1.")
    assert {s.name for s in renamed} == {f"t1.{n}" for n in declared}
    assert [s.partitions for s in renamed] == [s.partitions for s in declared.values()]


def _doc(**entry):
    return {"topics": [{"name": "a", "partitions": 2, **entry}]}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"nope": []}, "topics"),
        (_doc(partitons=3), "unknown key"),
        ({"topics": [{"name": "a", "partitions": 0}]}, "partitions"),
        ({"topics": [{"name": "a b", "partitions": 1}]}, "name"),
        (_doc(config={"cleanup.policy": "shred"}), "cleanup.policy"),
        ({"topics": [{"name": "a", "partitions": 1}, {"name": "a", "partitions": 1}]}, "twice"),
        (
            {
                "topics": [
                    {"name": "a", "partitions": 4, "copartition": "g"},
                    {"name": "b", "partitions": 8, "copartition": "g"},
                ]
            },
            "co-partitioned group 'g'",
        ),
    ],
)
def test_bad_declarations_are_refused_with_the_reason(document, message):
    with pytest.raises(ConfigError, match=message):
        parse_topics(document)


def test_invalid_yaml_names_the_line(tmp_path):
    path = tmp_path / "topics.yaml"
    path.write_text("topics:\n  - name: a\n    partitions: [1\n")
    with pytest.raises(ConfigError, match="line"):
        load_topics(path)


def test_missing_file_says_which_variable_to_set(tmp_path):
    with pytest.raises(ConfigError, match="MESH_TOPICS_FILE"):
        load_topics(tmp_path / "absent.yaml")
