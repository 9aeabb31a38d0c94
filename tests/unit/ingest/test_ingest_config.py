"""Ingest's configuration from the environment: the mesh's topic prefix and explicit overrides."""

import re

import pytest

from services.ingest.config import IngestConfig
from shared.errors import ConfigError


def test_topics_default_to_the_contract_names() -> None:
    config = IngestConfig.from_env({})
    assert (config.records_prefix, config.invalid_topic) == ("records", "records.invalid")
    assert config.windows_topic == "metrics.windows"
    assert re.fullmatch(config.raw_pattern, "raw.transactions")


def test_the_mesh_topic_prefix_applies_to_every_topic_ingest_touches() -> None:
    config = IngestConfig.from_env({"MESH_TOPIC_PREFIX": "mesh-1a.b."})
    assert config.records_prefix == "mesh-1a.b.records"
    assert config.invalid_topic == "mesh-1a.b.records.invalid"
    assert config.windows_topic == "mesh-1a.b.metrics.windows"
    # Python's re and Java's regex agree on these escapes; the dot is literal.
    assert re.fullmatch(config.raw_pattern, "mesh-1a.b.raw.logins")
    assert not re.fullmatch(config.raw_pattern, "mesh-1aXb.raw.logins")
    assert not re.fullmatch(config.raw_pattern, "raw.logins")


def test_an_explicit_topic_wins_over_the_prefix() -> None:
    env = {"MESH_TOPIC_PREFIX": "p.", "MESH_INGEST_INVALID_TOPIC": "dead.letters"}
    config = IngestConfig.from_env(env)
    assert config.invalid_topic == "dead.letters"
    assert config.windows_topic == "p.metrics.windows"


@pytest.mark.parametrize(
    ("variable", "value"),
    [("MESH_INGEST_MAX_RECORD_BYTES", "12"), ("MESH_INGEST_SHUFFLE_PARTITIONS", "0")],
)
def test_a_bad_value_names_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        IngestConfig.from_env({variable: value})
