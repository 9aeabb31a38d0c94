"""IngestConfig: everything the ingest job can be told, from ``MESH_INGEST_*`` variables.

Each field's variable is ``MESH_INGEST_`` plus its name in upper case
(``MESH_INGEST_MAX_RECORD_BYTES``). Topic names default to ARCHITECTURE.md's contract, under the
mesh's ``MESH_TOPIC_PREFIX`` like every other service's (private meshes on one cluster).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.ingest.data_loss import FAIL, ON_DATA_LOSS
from services.ingest.trigger_mode import (
    DEFAULT_SHUFFLE_PARTITIONS,
    check_mode,
    checkpoint_seconds,
    side_slots,
    spark_duration,
)
from shared.errors import ConfigError
from shared.settings import Settings, env_values
from shared.topic_names import TopicNames

_UNPREFIXED = TopicNames()


@dataclass(frozen=True)
class IngestConfig:
    #: Raw topics to read, as a Java regex (every raw type by default).
    raw_pattern: str = _UNPREFIXED.raw_pattern
    #: Valid records go to ``<records_prefix>.<type>``.
    records_prefix: str = _UNPREFIXED.records_family
    invalid_topic: str = _UNPREFIXED.invalid
    windows_topic: str = _UNPREFIXED.windows
    #: Larger raw values are invalid (OVERSIZED); the generator's oversized kind exceeds this.
    max_record_bytes: int = 512 * 1024
    #: A valid record whose event time is this far behind its arrival is counted as LATE.
    allowed_lateness_ms: int = 30_000
    #: How the routing query runs: real-time (long-running tasks, milliseconds per record; needs a
    #: task slot per raw partition, else it falls back with one line) or micro-batch.
    mode: str = "real-time"
    #: Real-time mode's batch length: how often routing checkpoints its progress (what a crash
    #: replays); not a latency. Spark's minimum is 5 seconds.
    checkpoint_interval: str = "30 seconds"
    #: Micro-batch trigger interval ("0 seconds" = start the next batch as soon as one ends).
    trigger: str = "0 seconds"
    #: The window-count query's trigger interval. Its counts are updated per batch and final only
    #: after the watermark (minutes), so seconds between batches cost nothing users see, while
    #: back-to-back stateful batches cost a fixed ~0.1-0.3 s of CPU each, with or without records
    #: (issue 20: about a third of an idle core).
    counting_trigger: str = "5 seconds"
    #: The span-export query's trigger interval. With none ("0 seconds") Spark asks Kafka for new
    #: raw offsets every 10 ms while nothing arrives, each time planning nothing: ingest idled at
    #: 347 ms/s of CPU with tracing on, 182 with "1 second" (issue 29). An ingest span ends when
    #: its sampled record was exported, so it may read up to this much longer than routing took.
    trace_trigger: str = "1 second"
    #: Upper bound of records per micro-batch, so a backlog is drained in bounded steps.
    max_offsets_per_trigger: int = 200_000
    #: Where to start on the very first run (later runs continue from the checkpoint).
    starting_offsets: str = "earliest"
    #: Spark master: auto = local[N] with a task slot per raw partition + 2 (trigger_mode.py);
    #: local[k] or spark://host:port to choose.
    master: str = "auto"
    #: Shuffle partitions of the window-count aggregation (= its state store partitions); a
    #: checkpoint keeps the count it began with (services.ingest.checkpoint_conf).
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS
    #: Checkpoint folder; default ``$MESH_HOME/ingest/checkpoints``.
    checkpoint_dir: Path | None = None
    #: Raw records removed by retention before ingest read them (services.ingest.data_loss):
    #: "report" them and go on, or "fail" (refuse to start, and stop a query that meets a loss).
    on_data_loss: str = "report"
    #: Share of new traces sampled (MESH_TRACE_SAMPLE_RATIO, as every service reads it).
    trace_sample_ratio: float = 0.01

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IngestConfig:
        """The configuration from ``env`` (default: the process environment)."""
        return cls.from_settings(Settings.from_env(env))

    @classmethod
    def from_settings(cls, settings: Settings) -> IngestConfig:
        """``MESH_INGEST_*`` from the environment ``settings`` were read from; the topics under
        the settings' prefix; the sample ratio as every service reads it (MESH_TRACE_*)."""
        values = env_values(cls, "MESH_INGEST_", settings.environment)
        if "trace_sample_ratio" not in values:
            from shared.tracing import TracingConfig

            values["trace_sample_ratio"] = TracingConfig.from_env(settings).sample_ratio
        names = TopicNames.of(settings)
        defaults = {
            "raw_pattern": names.raw_pattern,
            "records_prefix": names.records_family,
            "invalid_topic": names.invalid,
            "windows_topic": names.windows,
        }
        values = {**defaults, **values}
        config = cls(**values)  # type: ignore[arg-type]
        if config.max_record_bytes < 1024:
            raise ConfigError("MESH_INGEST_MAX_RECORD_BYTES must be at least 1024")
        check_mode(config.mode)
        checkpoint_seconds(config.checkpoint_interval)
        spark_duration(config.trigger, "MESH_INGEST_TRIGGER")
        spark_duration(config.counting_trigger, "MESH_INGEST_COUNTING_TRIGGER")
        spark_duration(config.trace_trigger, "MESH_INGEST_TRACE_TRIGGER")
        if config.on_data_loss not in ON_DATA_LOSS:
            raise ConfigError(f"MESH_INGEST_ON_DATA_LOSS must be one of {', '.join(ON_DATA_LOSS)}, "
                              f"not {config.on_data_loss!r}")  # fmt: skip
        if config.allowed_lateness_ms < 0:
            raise ConfigError("MESH_INGEST_ALLOWED_LATENESS_MS must be 0 or more")
        if config.shuffle_partitions < 1:
            raise ConfigError("MESH_INGEST_SHUFFLE_PARTITIONS must be 1 or more")
        return config

    @property
    def fail_on_data_loss(self) -> bool:
        return self.on_data_loss == FAIL

    def checkpoints(self, settings: Settings) -> Path:
        return self.checkpoint_dir or settings.home / "ingest" / "checkpoints"

    @property
    def side_slots(self) -> int:
        """Task slots the job keeps for its side queries (trigger_mode.side_slots)."""
        return side_slots(self.shuffle_partitions)

    @property
    def watermark_delay(self) -> str:
        """How long window state is kept: future skew allowed by the rules + lateness + margin.

        A record that is neither late nor in the future beyond the rules' 5 minutes always falls
        in a window whose state still exists, so no on-time record is dropped by the watermark.
        """
        from services.ingest.rules import MAX_FUTURE_MS

        return f"{(MAX_FUTURE_MS + self.allowed_lateness_ms + 60_000) // 1000} seconds"
