"""MetricsReporter: the registry's snapshots onto the compacted ``metrics`` topic.

Every ``interval_s`` a daemon thread produces one snapshot per metric; :meth:`produce` does the
same on demand (the detector runtime publishes its counts with every offset commit), and
:meth:`close` publishes a last one and flushes. Values are Avro ``MetricSnapshot`` records in
single-object encoding, keys ``<instance id>/<metric>`` (docs/metrics.md).

Two rules keep the topic right:

* **Counts never go backwards on the topic.** Taking snapshots and handing them to the producer
  happen under one lock, so two threads producing at once (the reporter's thread, the runtime's
  commit) enqueue them in the order they were taken, and librdkafka keeps that order per key.
* **The reporter polls only a producer it owns.** With the caller's producer (the runtime's),
  polling from the reporter's thread would run the caller's delivery callbacks on the wrong
  thread, concurrently with the caller's own ``flush``; the caller polls and flushes it anyway.
  A reporter given ``producer=None`` is disabled (no metrics topic): every call does nothing.

A snapshot that failed for want of a leader (a metrics topic with one replica on a cluster that
lost a broker) *holds* its partition: snapshots of keys that go there are not produced until
:meth:`release` says the partition has a leader again. Otherwise every later snapshot of those
keys would wait out the producer's delivery timeout, and the detector runtime's commits, which
flush the producer the snapshots share, with it. The runtime looks for the leader itself (with
its own held partitions); a reporter that owns its producer (the notifier's, ingest's, the
aggregator's) looks at each round of its thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaException, Producer

from shared.kafka.config import producer_config
from shared.kafka.leaders import leaderless, waited_for_a_leader
from shared.kafka.partitioner import partition_for
from shared.metrics.registry import MetricRegistry
from shared.metrics.snapshot import Snapshot
from shared.topic_names import TopicNames

log = logging.getLogger(__name__)

#: The schema of every value (schemas/metric_snapshot, record mesh.MetricSnapshot).
SCHEMA = "metric_snapshot"


class MetricsReporter:
    """Publishes ``registry``'s snapshots to ``topic`` through ``producer``.

    ``producer`` is a confluent-kafka ``Producer`` owned by the caller (who polls and flushes it),
    unless ``owns_producer`` (as built by :meth:`for_settings`): then the reporter polls it after
    each round and :meth:`close` is its last user.
    """

    def __init__(
        self,
        registry: MetricRegistry,
        producer: Any | None,
        topic: str,
        interval_s: float = 10.0,
        *,
        owns_producer: bool = False,
        serializer: Callable[[Snapshot], bytes] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"a reporting interval is positive, got {interval_s} s")
        if serializer is None and producer is not None:
            from shared.avro import AvroSerializer

            serializer = AvroSerializer(SCHEMA).encode
        self.registry = registry
        self.topic = topic
        self.interval_s = interval_s
        self._producer = producer
        self._owns = owns_producer
        self._encode = serializer
        self._produce_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: The count last handed to the producer per metric key (see ``produce(changed_only)``).
        self._sent_counts: dict[str, Any] = {}
        #: Snapshots the broker did not acknowledge (reported by delivery callbacks).
        self.delivery_failures = 0
        #: Partitions of the topic that lost their leader: nothing is produced to them until
        #: :meth:`release` (see the module docstring).
        self.held: set[int] = set()
        self._partitions: int | None = None

    @classmethod
    def for_settings(
        cls,
        registry: MetricRegistry,
        settings: Any,
        topic: str | None = None,
        interval_s: float | None = None,
    ) -> MetricsReporter:
        """A reporter with a producer of its own, for services without one (ingest, the
        aggregator): topic ``<prefix>metrics`` and ``MESH_METRICS_INTERVAL_S`` unless given."""

        from shared.avro import AvroSerializer, load_catalogue

        serializer = AvroSerializer(SCHEMA, catalogue=load_catalogue(settings.schemas_dir))
        return cls(
            registry,
            # Named, so the broker's request log says whose requests these are.
            Producer(producer_config(settings, **{"client.id": f"{registry.instance_id}-metrics"})),
            TopicNames.of(settings).metrics if topic is None else topic,
            settings.metrics_interval_s if interval_s is None else interval_s,
            owns_producer=True,
            serializer=serializer.encode,
        )

    @property
    def enabled(self) -> bool:
        return self._producer is not None

    def produce(self, types: Collection[str] | None = None, changed_only: bool = False) -> int:
        """Hand a snapshot of every metric (of ``types`` only, if given) to the producer now,
        without flushing; returns how many. Raises BufferError if the producer's queue is full
        (after one wait, for a producer the reporter owns).

        ``changed_only``: leave out metrics whose count is the one last handed over. The detector
        runtime publishes its counts with every offset commit (many a second at low rates, one
        batch of a few records each): a count that did not move since is already on the topic,
        and re-sending it multiplied the metrics topic's traffic (issue 29: ~500 snapshots/s
        from four detector instances at 1 000 records/s, most of them unchanged)."""
        producer, encode = self._producer, self._encode
        if producer is None or encode is None:
            return 0
        with self._produce_lock:
            items = self.registry.snapshot_items(types=types)
            if changed_only:
                items = [(k, r) for k, r in items if self._sent_counts.get(k) != r.get("count")]
            if self.held:
                items = [(k, r) for k, r in items if self._partition(k) not in self.held]
            for key, record in items:
                value = encode(record)
                try:
                    producer.produce(self.topic, value, key, on_delivery=self._on_delivery)
                except BufferError:
                    if not self._owns:
                        raise
                    producer.poll(1.0)
                    producer.produce(self.topic, value, key, on_delivery=self._on_delivery)
                self._sent_counts[key] = record.get("count")
            return len(items)

    def start(self) -> None:
        """Produce every ``interval_s`` on a daemon thread (once; later calls do nothing)."""
        if self._closed:
            raise RuntimeError("this metrics reporter is closed; create a new one")
        if self._producer is None or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._run, name=f"metrics-reporter-{self.registry.service}", daemon=True
        )
        self._thread.start()

    def close(self, timeout_s: float = 10.0) -> int:
        """Stop the thread, produce a last snapshot of everything and flush the producer.

        Returns the number of messages still undelivered after ``timeout_s`` (0 = all sent).
        Only the first call does anything.
        """
        with self._produce_lock:
            if self._closed:
                return 0
            self._closed = True
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._producer is None:
            return 0
        try:
            self.produce()
        except Exception:
            log.exception("could not produce the last metric snapshots")
        remaining = int(self._producer.flush(timeout_s))
        if remaining:
            log.warning(
                "%d message(s) not delivered to %s within %s s", remaining, self.topic, timeout_s
            )
        return remaining

    def __enter__(self) -> MetricsReporter:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self) -> None:
        producer = self._producer
        assert producer is not None  # start() does not start a disabled reporter
        while not self._stopping.wait(self.interval_s):
            try:
                if self._owns and self.held:
                    self._release_led(producer)
                self.produce()
                if self._owns:
                    producer.poll(0)  # serve delivery reports of our own producer
            except Exception:  # reporting must outlive a bad round (full queue, broken gauge)
                log.exception("could not produce metric snapshots to %s", self.topic)

    def release(self, partitions: Collection[int]) -> None:
        """Partitions that have a leader again: their keys' snapshots go out with the next
        round (their counts were not marked sent)."""
        self.held.difference_update(partitions)

    def _release_led(self, client: Any) -> None:
        """Release the held partitions that have a leader again (one metadata request)."""
        lost = leaderless(client, [(self.topic, number) for number in self.held])
        self.release({number for number in self.held if (self.topic, number) not in lost})

    def _partition(self, key: str | bytes) -> int:
        """The partition of the topic a key goes to (the producers' murmur2)."""
        if self._partitions is None:
            assert self._producer is not None
            try:
                metadata = self._producer.list_topics(self.topic, timeout=10).topics[self.topic]
            except (KafkaException, KeyError):
                return -1  # not known yet: produced, and held again if it fails
            self._partitions = len(metadata.partitions)
        raw = key.encode() if isinstance(key, str) else key
        return partition_for(raw, self._partitions)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            if waited_for_a_leader(err):
                self.held.add(msg.partition())
            self.delivery_failures += 1
            self._sent_counts.clear()  # not on the topic after all: the next commit sends all
            log.warning("metric snapshot %r not delivered to %s: %s", msg.key(), self.topic, err)
