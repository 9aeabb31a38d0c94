"""The notifier's settings from MESH_NOTIFIER_*: defaults, values, and one line per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.notifier.config import DEFAULT_RULES, NotifierConfig
from shared.errors import ConfigError
from shared.settings import Settings


def _config(**env: str) -> NotifierConfig:
    return NotifierConfig.from_settings(Settings.from_env(env))


def test_defaults_and_the_topics_under_the_prefix() -> None:
    config = _config(MESH_TOPIC_PREFIX="t1.")
    assert config.rules == DEFAULT_RULES and config.dedup_ttl_s == 604800.0
    assert config.names.notifier_group == "t1.notifier"
    assert config.names.notifications_dlq == "t1.notifications.dlq"


def test_values_from_the_environment() -> None:
    config = _config(MESH_NOTIFIER_RULES="/etc/mesh/rules.yaml", MESH_NOTIFIER_DEDUP_TTL_S="60",
                     MESH_NOTIFIER_BREAKER_FAILURES="2")  # fmt: skip
    assert (config.rules, config.dedup_ttl_s, config.breaker_failures) == (
        Path("/etc/mesh/rules.yaml"), 60.0, 2
    )  # fmt: skip


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MESH_NOTIFIER_DEDUP_TTL_S": "0"}, "MESH_NOTIFIER_DEDUP_TTL_S must be more than 0"),
        ({"MESH_NOTIFIER_DEDUP_TTL_S": "a week"}, "MESH_NOTIFIER_DEDUP_TTL_S='a week'"),
        ({"MESH_NOTIFIER_BREAKER_FAILURES": "0"}, "MESH_NOTIFIER_BREAKER_FAILURES must be 1"),
        ({"MESH_NOTIFIER_POLL_S": "10"}, "MESH_NOTIFIER_POLL_S must be more than 0 and at most"),
    ],
)
def test_a_bad_value_names_its_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _config(**env)
    assert str(refused.value).startswith(message), refused.value
