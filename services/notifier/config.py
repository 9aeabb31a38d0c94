"""NotifierConfig: the notifier's settings, ``MESH_NOTIFIER_*`` (declared with their defaults
in :class:`shared.service_settings.NotifierSettings`) from the environment the process's
Settings were read from, checked, and its topics under the mesh's prefix."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.errors import ConfigError
from shared.service_settings import NotifierSettings
from shared.settings import Settings, env_values
from shared.topic_names import TopicNames

DEFAULT_RULES = NotifierSettings.rules


@dataclass(frozen=True)
class NotifierConfig(NotifierSettings):
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
