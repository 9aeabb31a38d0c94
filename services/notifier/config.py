"""NotifierConfig: the notifier's settings, ``MESH_NOTIFIER_*`` from the environment the
process's Settings were read from, and its topics under the mesh's prefix.

* ``MESH_NOTIFIER_RULES``: the routing file (default ``infra/notifier/rules.yaml``);
* ``MESH_NOTIFIER_DEDUP_TTL_S``: how long a finished delivery is remembered, so a repeat of its
  alert within it is suppressed (7 days);
* ``MESH_NOTIFIER_BREAKER_FAILURES``: failures in a row that open a channel's breaker (5);
* ``MESH_NOTIFIER_BREAKER_COOLDOWN_S``: how long an open breaker waits before a trial (30);
* ``MESH_NOTIFIER_POLL_S``: the longest the loop waits for alerts before it looks at due
  retries (0.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from shared.errors import ConfigError
from shared.settings import PROJECT_ROOT, Settings, env_values
from shared.topic_names import TopicNames

DEFAULT_RULES = PROJECT_ROOT / "infra" / "notifier" / "rules.yaml"


@dataclass(frozen=True)
class NotifierConfig:
    rules: Path = DEFAULT_RULES
    dedup_ttl_s: float = 7 * 24 * 3600.0
    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0
    poll_s: float = 0.2
    #: the topic and group names under the mesh's prefix (not an environment variable)
    names: TopicNames = field(default_factory=TopicNames, metadata={"variable": False})

    @classmethod
    def from_settings(cls, settings: Settings) -> NotifierConfig:
        values = env_values(cls, "MESH_NOTIFIER_", settings.environment)
        config = cls(**values, names=TopicNames.of(settings))  # type: ignore[arg-type]
        config.check()
        return config

    def check(self) -> None:
        if self.dedup_ttl_s <= 0:
            raise ConfigError("MESH_NOTIFIER_DEDUP_TTL_S must be more than 0 seconds")
        if self.breaker_failures < 1:
            raise ConfigError("MESH_NOTIFIER_BREAKER_FAILURES must be 1 or more")
        if self.breaker_cooldown_s < 0:
            raise ConfigError("MESH_NOTIFIER_BREAKER_COOLDOWN_S must be 0 or more seconds")
        if not 0 < self.poll_s <= 5:
            raise ConfigError("MESH_NOTIFIER_POLL_S must be more than 0 and at most 5 seconds")
