"""AggregatorConfig: what one run of the aggregator is told (command line over Settings).

Topics follow the contract with the mesh's ``MESH_TOPIC_PREFIX``: ``<prefix>metrics``,
``<prefix>metrics.windows`` and ``<prefix>metrics.dlq``. Files live under ``$MESH_HOME``:
checkpoints in ``metrics_aggregator/checkpoint``, the status in ``metrics_aggregator/status.json``,
points in ``metrics/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shared.errors import ConfigError
from shared.service_files import METRICS_AGGREGATOR, aggregator_status_file
from shared.settings import Settings
from shared.topic_names import TopicNames

NAME = METRICS_AGGREGATOR


@dataclass(frozen=True)
class AggregatorConfig:
    topic_prefix: str = ""
    #: Checkpoint folder, one sub-folder per query (default: see :meth:`checkpoints`).
    checkpoint_dir: Path | None = None
    #: Seconds between micro-batches (also how often silent series are checked for staleness).
    #: From the settings it is the reporting interval (MESH_METRICS_INTERVAL_S): every instance
    #: reports once per interval, so batches more often only cost more (at 2 s, with the earlier
    #: Spark-stateful series query, a mesh idling burnt 0.7 of a core: issue 20).
    trigger_s: float = 2.0
    #: Process what is in the topics now, then stop (see job.caught_up).
    once: bool = False
    #: Spark master when run directly (spark-submit's --master wins).
    master: str = "local[2]"
    #: Shuffle partitions (the windows query's latest-count-per-window; the series state is in
    #: the driver and has none).
    shuffle_partitions: int = 2
    #: Upper bound of messages per micro-batch and topic.
    max_offsets_per_trigger: int = 100_000
    #: Silence after which an instance is stale (Settings.metrics_stale_after_s).
    stale_after_s: float = 60.0
    #: Retired instance ids remembered per series (see series_state).
    remember_retired: int = 1000

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> AggregatorConfig:
        values: dict[str, object] = {
            "topic_prefix": settings.topic_prefix,
            "stale_after_s": settings.metrics_stale_after_s,
            "trigger_s": settings.metrics_interval_s,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)  # type: ignore[arg-type]
        config.check()
        return config

    def check(self) -> None:
        if self.trigger_s < 0:
            raise ConfigError(
                f"the trigger interval must be 0 or more seconds, got {self.trigger_s}"
            )
        if self.stale_after_s <= 0:
            raise ConfigError(
                f"MESH_METRICS_STALE_AFTER_S must be more than 0 seconds, got {self.stale_after_s}"
            )
        if self.shuffle_partitions < 1 or self.max_offsets_per_trigger < 1:
            raise ConfigError("shuffle partitions and max offsets per trigger must be at least 1")
        if self.remember_retired < 0:
            raise ConfigError("the number of retired instances remembered must be 0 or more")

    @property
    def metrics_topic(self) -> str:
        return TopicNames(self.topic_prefix).metrics

    @property
    def windows_topic(self) -> str:
        return TopicNames(self.topic_prefix).windows

    @property
    def dlq_topic(self) -> str:
        return TopicNames(self.topic_prefix).metrics_dlq

    @property
    def stale_after_ms(self) -> int:
        return max(int(self.stale_after_s * 1000), 1)

    @property
    def trigger(self) -> str:
        return f"{int(self.trigger_s * 1000)} milliseconds"

    def checkpoints(self, settings: Settings) -> Path:
        """The checkpoint folder; default ``$MESH_HOME/metrics_aggregator/checkpoint``."""
        return self.checkpoint_dir or settings.home / NAME / "checkpoint"


def status_path(settings: Settings) -> Path:
    return aggregator_status_file(settings.home)


def metrics_dir(settings: Settings) -> Path:
    return settings.home / "metrics"
