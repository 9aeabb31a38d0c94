"""The ``MESH_<SERVICE>_*`` settings of the services, declared in the library.

A service's own settings (``MESH_INGEST_*``, ``MESH_NOTIFIER_*``) are declared here, each field
with its type, default and a ``#:`` line saying what it does, so the control plane can list and
check every setting (``mesh settings``, :mod:`shared.settings_catalogue`) without importing a
service. The service's config class extends its section with what the service does with the
values (cross-checks, derived names and paths): ``services/ingest/config.py``,
``services/notifier/config.py``. Each field's variable is the section's prefix plus the field
name in upper case, read by :func:`shared.settings.env_values`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shared.settings import PROJECT_ROOT
from shared.topic_names import TopicNames

_UNPREFIXED = TopicNames()

#: The window counts' shuffle (= state store) partitions by default. One: what crosses the
#: shuffle is already counted per reading task (a row per topic, window and status), so more
#: partitions split no work and only add fixed cost per batch, a state store each to load,
#: maintain and commit (issue 29, a counts-only query at 5 s batches: ~1.45 s of CPU a batch
#: with 4, ~0.95 s with 1, at 1 000 or 5 000 records a batch alike), and the task slots kept for
#: them beside real-time routing. A checkpoint keeps the count it started with
#: (services.ingest.checkpoint_conf).
INGEST_SHUFFLE_PARTITIONS = 1


@dataclass(frozen=True)
class IngestSettings:
    """``MESH_INGEST_*``: the ingest job (services/ingest)."""

    #: Raw topics to read, as a Java regex (every raw type by default).
    raw_pattern: str = _UNPREFIXED.raw_pattern
    #: Valid records go to ``<records_prefix>.<type>``.
    records_prefix: str = _UNPREFIXED.records_family
    #: Invalid records go here, each with its original bytes and the reason (dead letters).
    invalid_topic: str = _UNPREFIXED.invalid
    #: The valid/invalid counts per 1-second window and raw topic go here (compacted).
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
    #: local[k] or spark://host:port to choose; a local master tries a failed task 4 times.
    master: str = "auto"
    #: Shuffle partitions of the window-count aggregation (= its state store partitions); a
    #: checkpoint keeps the count it began with (services.ingest.checkpoint_conf).
    shuffle_partitions: int = INGEST_SHUFFLE_PARTITIONS
    #: Checkpoint folder; default ``$MESH_HOME/ingest/checkpoints``.
    checkpoint_dir: Path | None = None
    #: Raw records removed by retention before ingest read them (services.ingest.data_loss):
    #: "report" them and go on, or "fail" (refuse to start, and stop a query that meets a loss).
    on_data_loss: str = "report"
    #: Share of new traces sampled (MESH_TRACE_SAMPLE_RATIO, as every service reads it).
    trace_sample_ratio: float = 0.01
    #: Times routing's plan is planned and run on a few static rows before the queries start, so
    #: the first hand-overs meet warm code (services.ingest.warmup); 0 = none (the default until
    #: measured on the whole mesh; ~20 is where one JVM's planning stops getting faster).
    warmup_rounds: int = 0


@dataclass(frozen=True)
class NotifierSettings:
    """``MESH_NOTIFIER_*``: the notifier (services/notifier)."""

    #: The routing rules file: which alerts go to which channels (docs/notifier.md).
    rules: Path = PROJECT_ROOT / "infra" / "notifier" / "rules.yaml"
    #: Seconds a finished delivery is remembered, so a repeat of its alert is suppressed (7 days).
    dedup_ttl_s: float = 7 * 24 * 3600.0
    #: Failures in a row that open a channel's breaker.
    breaker_failures: int = 5
    #: Seconds an open breaker waits before a trial delivery.
    breaker_cooldown_s: float = 30.0
    #: The longest the loop waits for alerts before it looks at due retries, in seconds.
    poll_s: float = 0.2
