"""Where generated records go: Kafka (with every delivery accounted for) or nowhere (dry run).

A load generator that drops failures on the floor lies about what it produced, so each record's
delivery report is counted: acknowledged per topic, or failed with the broker's reason. Records
the producer refuses outright (too large, unknown topic) count as failures too.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from tools.loadgen.errors import BrokerUnreachableError

#: How many failure messages a report keeps (the count is always complete).
MAX_ERRORS_KEPT = 10
#: Serve delivery callbacks after this many sends, so they do not pile up.
POLL_EVERY = 1000


@dataclass
class DeliveryOutcome:
    delivered: Counter[str] = field(default_factory=Counter)
    failed: int = 0
    errors: list[str] = field(default_factory=list)

    def fail(self, message: str, count: int = 1) -> None:
        self.failed += count
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(message)


#: Kafka headers as confluent-kafka takes them.
Headers = list[tuple[str, str | bytes | None]]


class RecordSink(Protocol):
    def send(
        self, topic: str, key: bytes | None, value: bytes, headers: Headers | None = None
    ) -> None: ...

    def wait(self, seconds: float) -> None:
        """Pause (the rate limiter calls this); a sink may do useful work meanwhile."""

    def finish(self, timeout_s: float) -> DeliveryOutcome: ...


class DiscardingSink:
    """A dry run: every record is "delivered" to nowhere."""

    def __init__(self) -> None:
        self._outcome = DeliveryOutcome()

    def send(
        self, topic: str, key: bytes | None, value: bytes, headers: Headers | None = None
    ) -> None:
        self._outcome.delivered[topic] += 1

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def finish(self, timeout_s: float) -> DeliveryOutcome:
        return self._outcome


class KafkaSink:
    """A confluent-kafka producer whose every delivery report is counted."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._outcome = DeliveryOutcome()
        self._producer = Producer({**config, "on_delivery": self._on_delivery})
        self._unpolled = 0

    def missing_topics(self, topics: list[str], timeout_s: float = 10.0) -> list[str]:
        """Those of ``topics`` the cluster does not have (asked without auto-creating any)."""
        try:
            metadata = self._producer.list_topics(timeout=timeout_s)
        except KafkaException as error:
            raise BrokerUnreachableError(
                f"Kafka did not answer within {timeout_s:g} s ({error.args[0].str()}): start it "
                "with `mesh up` or point MESH_BOOTSTRAP_SERVERS at a running cluster"
            ) from None
        return [topic for topic in topics if topic not in metadata.topics]

    def send(
        self, topic: str, key: bytes | None, value: bytes, headers: Headers | None = None
    ) -> None:
        while True:
            try:
                self._producer.produce(topic, value, key, headers=headers)
                break
            except BufferError:  # local queue full: let librdkafka drain it, then retry
                self._producer.poll(0.05)
            except KafkaException as error:
                self._outcome.fail(f"{topic}: {error.args[0].str()}")
                break
        self._unpolled += 1
        if self._unpolled >= POLL_EVERY:
            self._producer.poll(0)
            self._unpolled = 0

    def wait(self, seconds: float) -> None:
        """Serve delivery reports meanwhile. librdkafka polls in whole milliseconds and
        confluent-kafka rounds down, so a debt under 1 ms would poll without waiting, again and
        again: a paced run at 1 000 records/s spun ~0.4 s of CPU a second (issue 20). Waiting
        at least 1 ms is exact in the long run (the token bucket carries the difference)."""
        self._producer.poll(max(seconds, 0.001))

    def finish(self, timeout_s: float) -> DeliveryOutcome:
        """Flush; records still unacknowledged after ``timeout_s`` count as failed."""
        remaining = self._producer.flush(timeout_s)
        if remaining:
            self._outcome.fail(
                f"{remaining} records not acknowledged within {timeout_s:g} s", remaining
            )
        # The producer holds this sink (its delivery callback), a cycle only the garbage
        # collector breaks: until then librdkafka's threads would keep calling a broker that may
        # be gone. Let it go now; the sink is done.
        del self._producer
        return self._outcome

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        topic = message.topic() or "?"
        if error is None:
            self._outcome.delivered[topic] += 1
        else:
            self._outcome.fail(f"{topic}: {error.str()}")
