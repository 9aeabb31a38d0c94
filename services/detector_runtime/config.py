"""What one detector instance runs with: topics, group, batching, retries, error policy.

Defaults are the contract's names (``records.<type>``, ``alerts``, ``detectors.dlq``, group
``detector.<name>``); every name can be overridden, or prefixed as a whole, so tests and
benchmarks run on private topics without touching the runtime.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field

from shared.detector import Detector, Manifest
from shared.errors import ConfigError
from shared.topic_names import TopicNames

ERROR_ACTIONS = ("stop", "continue")
#: RuntimeConfig.commit_interval_s unless told otherwise (``--commit-interval-ms``).
DEFAULT_COMMIT_INTERVAL_S = 0.5
#: The longest commit interval allowed.
MAX_COMMIT_INTERVAL_S = 60.0
#: RuntimeConfig.delivery_timeout_s unless told otherwise (``--delivery-timeout-ms``), and its
#: bounds: librdkafka's own default is the longest.
DEFAULT_DELIVERY_TIMEOUT_S = 30.0
DELIVERY_TIMEOUT_BOUNDS_S = (1.0, 300.0)


def new_instance_id(name: str) -> str:
    """Stable for the life of the process, unique across hosts: name, host, pid, random."""
    return f"{name}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Topics:
    """Every topic one detector instance touches."""

    #: record type -> input topic
    inputs: dict[str, str]
    alerts: str
    dlq: str
    changelog: str
    #: Where the instance reports its metric snapshots (docs/metrics.md).
    metrics: str = TopicNames().metrics

    @property
    def input_types(self) -> dict[str, str]:
        """input topic -> record type"""
        return {topic: record_type for record_type, topic in self.inputs.items()}


def default_topics(
    detector: Detector, prefix: str = "", overrides: dict[str, str] | None = None
) -> Topics:
    """The contract's topic names under ``prefix``; ``overrides`` maps a record type to a topic."""
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(detector.inputs))
    if unknown:
        raise ConfigError(
            f"--input {unknown[0]}=...: {detector.name} reads {', '.join(detector.inputs)} only"
        )
    names = TopicNames(prefix)
    inputs = {t: overrides.get(t, names.records(t)) for t in detector.inputs}
    return Topics(
        inputs=inputs,
        alerts=names.alerts,
        dlq=names.detectors_dlq,
        changelog=names.changelog(detector.name),
        metrics=names.metrics,
    )


@dataclass(frozen=True)
class RuntimeConfig:
    detector: Detector
    manifest: Manifest
    topics: Topics
    group_id: str
    instance_id: str
    #: The instance has a name that outlives its process (``--instance-id``, as the deploy
    #: backends give each replica): it is a static group member under that name, and a restart
    #: takes its partitions back at once (shared/kafka/static_membership.py).
    static_member: bool = False
    #: Records per consume() call.
    batch_size: int = 2000
    #: How long to wait to fill a batch once a first record is in; 0 (the default) takes only what
    #: is already fetched, so a lone record is processed at once (runner._next_batch).
    batch_wait_s: float = 0.0
    #: How often processed records' offsets are committed, after the producers are flushed, and
    #: at the latest once ``batch_size`` records wait: a kill replays fewer than two batches
    #: (duplicates, never a loss); 0 commits every batch. The state changelogs and metrics are
    #: sent once per commit (a producer whose linger is this interval), alerts at once; issue
    #: 29 measured the per-batch cost.
    commit_interval_s: float = DEFAULT_COMMIT_INTERVAL_S
    #: How long one poll blocks while no record arrives (bounds how late a stop is noticed).
    idle_wait_s: float = 0.2
    #: Kafka's max.poll.interval.ms: a consumer that does not poll for this long is evicted.
    max_poll_interval_ms: int = 300_000
    #: Processing time per batch before the rest is handed back (seek) to stay within the poll
    #: interval; a fraction of it, so that producing and committing fit too.
    max_batch_s: float = 60.0
    #: How long to wait for the broker to acknowledge a batch's output before giving up (at
    #: least the delivery timeout below, and a margin: see the runner's ``_flush_wait_s``).
    flush_timeout_s: float = 60.0
    #: How long a message may wait for its partition's leader (librdkafka's message.timeout.ms,
    #: 300 s by default). Past it the message fails, and only the input partition it came from
    #: waits for that leader (parking.py); every partition waits this long once, in the commit
    #: that finds the loss. Longer than any leader election of a replicated topic (~5-10 s).
    delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S
    #: Retries of a record whose detect raised RetriableError.
    retries: int = 3
    retry_backoff_s: float = 0.05
    #: Share of failed records (over the last ``error_window`` records) that triggers the policy.
    error_rate_threshold: float = 0.5
    error_window: int = 200
    error_action: str = "stop"
    #: How long to wait at start-up for missing input topics (e.g. ``mesh up`` creating them).
    topic_wait_s: float = 30.0
    #: Seconds between progress log lines.
    log_interval_s: float = 10.0
    extra_consumer_config: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ConfigError(f"--batch-size must be >= 1, got {self.batch_size}")
        if self.max_batch_s * 1000 >= self.max_poll_interval_ms:
            raise ConfigError("--max-batch-seconds must be shorter than max.poll.interval.ms")
        if not 0 <= self.commit_interval_s <= MAX_COMMIT_INTERVAL_S:
            raise ConfigError(
                f"--commit-interval-ms must be from 0 to {MAX_COMMIT_INTERVAL_S * 1000:.0f}, "
                f"got {self.commit_interval_s * 1000:.0f}"
            )
        low, high = DELIVERY_TIMEOUT_BOUNDS_S
        if not low <= self.delivery_timeout_s <= high:
            raise ConfigError(
                f"--delivery-timeout-ms must be from {low * 1000:.0f} to {high * 1000:.0f}, "
                f"got {self.delivery_timeout_s * 1000:.0f}"
            )
        if self.error_action not in ERROR_ACTIONS:
            raise ConfigError(f"--on-error-rate must be one of {', '.join(ERROR_ACTIONS)}")
        if not 0 < self.error_rate_threshold <= 1:
            raise ConfigError("--error-rate-threshold must be a fraction in (0, 1]")
