"""The topic names the code uses are the ones infra/topics.yaml declares, under any prefix."""

import re
from dataclasses import replace

from shared.kafka.topics import declared_topics, load_topics
from shared.settings import Settings
from shared.topic_names import RAW, TopicNames


def _record_types(names: list[str]) -> tuple[str, ...]:
    return tuple(n.split(".", 1)[1] for n in names if n.startswith(f"{RAW}."))


def test_every_declared_topic_is_named_by_the_code_and_nothing_else_is():
    settings = Settings.from_env({})
    declared = [spec.name for spec in load_topics(settings.topics_file)]
    assert sorted(TopicNames().declared(_record_types(declared))) == sorted(declared)


def test_a_prefix_names_the_same_topics_as_the_prefixed_declaration():
    settings = replace(Settings.from_env({}), topic_prefix="mesh-1a2b.")
    declared = [spec.name for spec in declared_topics(settings)]
    types = _record_types([n.removeprefix("mesh-1a2b.") for n in declared])
    assert sorted(TopicNames.of(settings).declared(types)) == sorted(declared)
    assert TopicNames.of(settings).detector_group("velocity") == "mesh-1a2b.detector.velocity"


def test_the_raw_pattern_takes_every_raw_type_under_the_prefix_only():
    names = TopicNames("a.b+")  # regex characters in a prefix are taken literally
    pattern = re.compile(names.raw_pattern)
    assert pattern.fullmatch("a.b+raw.parcels")
    assert not pattern.fullmatch("a.b+records.transactions")
    assert not pattern.fullmatch("axb+raw.parcels")
    assert not pattern.fullmatch("raw.parcels")
