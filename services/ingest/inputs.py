"""What every ingest query starts from: the raw topics, read and classified one way.

The routing, counting and trace-export queries each need their own Kafka source (a streaming
query owns its offsets), but the rest is the same for all of them and is worked out once per job
start: where Kafka is, the schema catalogue, the checked record types, and the one definition of
classification (:func:`~services.ingest.validation.classify`) applied to a raw source. A query
started again after a partition of its topics lost its leader reuses it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from services.ingest.config import IngestConfig
from services.ingest.routing_handover import Handover
from services.ingest.trigger_mode import SIDE_READ_TASKS
from services.ingest.validation import CheckedType, checked_types, classify
from shared.avro.catalogue import Catalogue
from shared.endpoints import resolve_bootstrap
from shared.kafka.security import spark_kafka_options
from shared.settings import Settings
from shared.topic_names import TopicNames

#: The deadline of a Kafka call of ingest's sources: the driver's offset lookups (Spark's
#: KafkaOffsetReaderAdmin) and the executors' consumers alike (Spark gives both the same
#: settings). Kafka's default, 60 s, is how long routing stopped when a broker of three was
#: SIGKILLed: the driver's lookup kept asking the dead leader until its deadline, though the
#: cluster had a new one ~9 s after the kill; Spark then tried again and went on (issue 48).
#: 10 s was too short: an executor's consumer, whose position lookup has the same deadline,
#: failed its task before the new leader was known, and the query with it. A try that ends is
#: retried, a second apart, with fresh metadata; the tries together are as long as before.
OFFSET_CALL_TIMEOUT_MS = 20_000
OFFSET_CALL_TRIES = 3
#: One request's answer: Kafka requires it no longer than a call's deadline (default 30 s).
REQUEST_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class IngestInputs:
    bootstrap: str
    catalogue: Catalogue
    #: record type -> its schema's checked fields
    types: dict[str, CheckedType]
    #: the login of every Kafka source and sink (none on a plaintext cluster)
    kafka_options: dict[str, str] = field(default_factory=dict)
    #: the consumer groups of the raw sources start with it (a secure mesh grants it by prefix)
    group_prefix: str = "ingest"

    @classmethod
    def load(cls, settings: Settings) -> IngestInputs:
        catalogue = Catalogue.load(settings.schemas_dir)
        return cls(resolve_bootstrap(settings), catalogue, checked_types(catalogue),
                   spark_kafka_options(settings),
                   TopicNames.of(settings).ingest_group_prefix)  # fmt: skip

    def raw(
        self,
        spark: SparkSession,
        config: IngestConfig,
        real_time: bool = False,
        handover: Handover | None = None,
    ) -> DataFrame:
        """Every raw topic, by pattern, with headers (for trace context), a task per partition;
        routing after a handover reads the partitions it says, from where it says
        (:mod:`services.ingest.routing_handover`).
        A loss of raw records (retention ahead of the reader) stops the query only if
        ``on_data_loss`` says fail; the job reports a loss while it was stopped itself
        (services.ingest.data_loss).

        A micro-batch reads at most ``max_offsets_per_trigger`` records, so a backlog drains in
        bounded steps; real-time mode refuses that option (its tasks read as records come)."""
        reader = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .options(**self._reads(config, handover))
            .option("includeHeaders", "true")
            .option("failOnDataLoss", str(config.fail_on_data_loss).lower())
            .option("kafka.metadata.max.age.ms", "5000")  # a new raw.<type> topic within seconds
            .option("kafka.default.api.timeout.ms", str(OFFSET_CALL_TIMEOUT_MS))
            .option("kafka.request.timeout.ms", str(REQUEST_TIMEOUT_MS))
            .option("fetchOffset.numRetries", str(OFFSET_CALL_TRIES))
            .option("groupIdPrefix", self.group_prefix)
            .options(**self.kafka_options)
        )
        if not real_time:
            reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
        return reader.load()

    @staticmethod
    def _reads(config: IngestConfig, handover: Handover | None) -> dict[str, str]:
        if handover is None:
            return {"subscribePattern": config.raw_pattern,
                    "startingOffsets": config.starting_offsets}  # fmt: skip
        return handover.source_options(config.raw_pattern)

    def side_raw(self, spark: SparkSession, config: IngestConfig) -> DataFrame:
        """The raw topics as a side query (window counts, span export) reads them: in
        SIDE_READ_TASKS tasks whatever the partition count, so its batches fit in the slots kept
        for it and never hold routing's (:func:`services.ingest.trigger_mode.side_slots`)."""
        return self.raw(spark, config).coalesce(SIDE_READ_TASKS)

    def classified(self, raw: DataFrame, config: IngestConfig) -> DataFrame:
        """``raw`` (from :meth:`raw` or :meth:`side_raw`), each record with its one outcome
        (valid, or an error code)."""
        return classify(raw, self.types, config.max_record_bytes)
