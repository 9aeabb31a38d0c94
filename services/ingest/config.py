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
from services.ingest.rules import MAX_FUTURE_MS
from services.ingest.trigger_mode import (
    check_mode,
    checkpoint_seconds,
    side_slots,
    spark_duration,
)
from shared.errors import ConfigError
from shared.service_settings import IngestSettings
from shared.settings import Settings, env_values
from shared.topic_names import TopicNames


@dataclass(frozen=True)
class IngestConfig(IngestSettings):
    """The ingest settings (declared in :class:`shared.service_settings.IngestSettings`) as the
    job uses them: topics under the mesh's prefix, every value checked."""

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

        return f"{(MAX_FUTURE_MS + self.allowed_lateness_ms + 60_000) // 1000} seconds"
