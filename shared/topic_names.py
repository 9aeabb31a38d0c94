"""Every topic name of the mesh, with the mesh's prefix: the one place they are spelled.

``infra/topics.yaml`` declares the topics (partitions, retention, compaction); this module names
them for the code. A prefix (``MESH_TOPIC_PREFIX``, e.g. ``mesh-3f9c1a2b.``; it carries its own
separator) puts a whole mesh under private names on a shared cluster, as the tests and benchmarks
run; consumer groups of detectors get it too, so two meshes never share a group.
``tests/unit/test_topic_names.py`` checks that every declared topic is one of these names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.settings import Settings

#: The families of per-record-type topics: ``raw.<type>`` in, ``records.<type>`` validated.
RAW, RECORDS = "raw", "records"


@dataclass(frozen=True)
class TopicNames:
    """The names under one prefix (``""`` for the mesh's own cluster)."""

    prefix: str = ""

    @classmethod
    def of(cls, settings: Settings) -> TopicNames:
        return cls(settings.topic_prefix)

    def raw(self, record_type: str) -> str:
        """Raw JSON records of one type, as producers write them."""
        return f"{self.prefix}{RAW}.{record_type}"

    @property
    def raw_family(self) -> str:
        """``<prefix>raw``: a producer writes a record of one type to ``<this>.<type>``."""
        return f"{self.prefix}{RAW}"

    @property
    def raw_pattern(self) -> str:
        """The regular expression ingest subscribes to: every ``raw.<type>``, new ones too."""
        return re.escape(f"{self.prefix}{RAW}.") + ".*"

    def records(self, record_type: str) -> str:
        """Validated Avro records of one type, as detectors read them."""
        return f"{self.prefix}{RECORDS}.{record_type}"

    @property
    def records_family(self) -> str:
        """``<prefix>records``: ingest routes a valid record to ``<this>.<type>``."""
        return f"{self.prefix}{RECORDS}"

    @property
    def invalid(self) -> str:
        """Ingest's dead letters: every raw record that failed validation, with the reason."""
        return f"{self.prefix}{RECORDS}.invalid"

    @property
    def alerts(self) -> str:
        return f"{self.prefix}alerts"

    @property
    def alerts_shadow(self) -> str:
        """Alerts of a shadow version (`mesh rollout --shadow`): compared, never notified."""
        return f"{self.prefix}alerts.shadow"

    @property
    def detectors_dlq(self) -> str:
        """Records a detector could not process, with the reason."""
        return f"{self.prefix}detectors.dlq"

    @property
    def metrics(self) -> str:
        """Every instance's metric snapshots (compacted)."""
        return f"{self.prefix}metrics"

    @property
    def metrics_dlq(self) -> str:
        """Metric messages the aggregator could not decode."""
        return f"{self.prefix}metrics.dlq"

    @property
    def windows(self) -> str:
        """Ingest's valid/invalid counts per 1 s window (compacted)."""
        return f"{self.prefix}metrics.windows"

    @property
    def notifications(self) -> str:
        return f"{self.prefix}notifications"

    @property
    def notifications_dlq(self) -> str:
        """Deliveries the notifier gave up on, with the last error."""
        return f"{self.prefix}notifications.dlq"

    @property
    def notifier_changelog(self) -> str:
        """The notifier's delivery books; it creates it (partitions = alerts')."""
        return f"{self.prefix}notifier.changelog"

    @property
    def notifier_group(self) -> str:
        """The consumer group of every notifier instance."""
        return f"{self.prefix}notifier"

    def changelog(self, detector: str) -> str:
        """A stateful detector's state changes; the runtime creates it (partitions = inputs')."""
        return f"{self.prefix}detector.{detector}.changelog"

    @property
    def ingest_group_prefix(self) -> str:
        """How the consumer groups of ingest's Spark sources start (Spark adds a random part)."""
        return f"{self.prefix}ingest"

    @property
    def aggregator_group_prefix(self) -> str:
        """How the consumer groups of the metrics aggregator's Spark sources start."""
        return f"{self.prefix}metrics-aggregator"

    @property
    def history_group_prefix(self) -> str:
        """How the consumer groups of the history job's Spark source start."""
        return f"{self.prefix}history"

    def detector_group(self, detector: str) -> str:
        """The consumer group of every instance of one detector."""
        return f"{self.prefix}detector.{detector}"

    def shadow_group(self, detector: str) -> str:
        """The consumer group of a detector's shadow version, beside its live group."""
        return f"{self.detector_group(detector)}.shadow"

    def shadow_changelog(self, detector: str) -> str:
        """A stateful shadow's own state changes (the live version's are never touched)."""
        return f"{self.prefix}detector.{detector}.shadow.changelog"

    def declared(self, record_types: tuple[str, ...]) -> list[str]:
        """The names ``infra/topics.yaml`` must declare for these record types."""
        per_type = [name for t in record_types for name in (self.raw(t), self.records(t))]
        return [*per_type, self.invalid, self.alerts, self.alerts_shadow, self.detectors_dlq,
                self.metrics,
                self.metrics_dlq, self.windows, self.notifications,
                self.notifications_dlq]  # fmt: skip
