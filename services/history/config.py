"""HistoryConfig: where the history is kept and how its query runs (command line over Settings).

Files live under ``$MESH_HOME/history``: the tables in ``tables/`` (or any Hadoop path given as
``location``), the query's checkpoint in ``checkpoint/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shared.errors import ConfigError
from shared.service_files import HISTORY, history_checkpoint, history_location
from shared.settings import Settings
from shared.topic_names import TopicNames

NAME = HISTORY


@dataclass(frozen=True)
class HistoryConfig:
    #: The tables' root: a Hadoop path (``file:///...`` here); by default
    #: ``$MESH_HOME/history/tables``.
    location: str
    #: The query's checkpoint folder.
    checkpoint_dir: Path
    topic_prefix: str = ""
    #: Seconds between micro-batches: history is for backtests, a minute late is fine, and every
    #: batch is a Delta commit per table (fewer, larger files; less CPU beside the live path).
    trigger_s: float = 60.0
    #: Read what the topics hold now, then stop (tests, and a one-off catch-up).
    once: bool = False
    #: Upper bound of messages per micro-batch and topic.
    max_offsets_per_trigger: int = 2_000_000
    #: Days of event dates kept (Settings.history_days, MESH_HISTORY_DAYS).
    days: int = 60
    #: Seconds between two upkeeps (retention and compaction, :mod:`services.history.upkeep`).
    upkeep_interval_s: float = 3600.0

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> HistoryConfig:
        values: dict[str, object] = {
            "location": history_location(settings.home, settings.history_location),
            "checkpoint_dir": history_checkpoint(settings.home),
            "topic_prefix": settings.topic_prefix,
            "days": settings.history_days,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)  # type: ignore[arg-type]
        config.check()
        return config

    def check(self) -> None:
        if self.trigger_s < 0:
            raise ConfigError(
                f"the history's trigger must be 0 or more seconds, got {self.trigger_s}"
            )
        if self.days < 1:
            raise ConfigError(f"MESH_HISTORY_DAYS must be 1 or more days, got {self.days}")
        if self.upkeep_interval_s <= 0:
            raise ConfigError("the history's upkeep interval must be more than 0 seconds")
        if self.max_offsets_per_trigger < 1:
            raise ConfigError("the history's max offsets per trigger must be at least 1")
        if "://" not in self.location:
            raise ConfigError(
                f"history location {self.location!r} is not a URI: give a Hadoop path such as "
                "file:///var/mesh/history"
            )

    @property
    def names(self) -> TopicNames:
        return TopicNames(self.topic_prefix)
