"""`mesh status`'s live tail against a real broker: raw -> alert from the alerts' lineage header,
only for the alerts of the window asked for."""

import time

import pytest
from confluent_kafka import Producer

from shared.kafka.recent_latency import recent_alert_latency
from shared.lineage import SOURCE_TIMESTAMP_HEADER

pytestmark = pytest.mark.integration


def test_latency_of_recent_alerts_comes_from_their_source_timestamp(
    kafka_bootstrap, create_topics, unique_name
) -> None:
    (alerts,) = create_topics([unique_name("alerts")], partitions=2)
    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    # An old alert (10 minutes ago, raw record an hour before it): outside the window.
    old = now_ms - 600_000
    lineage = [(SOURCE_TIMESTAMP_HEADER, str(old - 3_600_000).encode())]
    producer.produce(alerts, b"old", timestamp=old, headers=lineage)
    # Ten recent ones, each alerted 100 * (n + 1) ms after its raw record; one without lineage.
    for n in range(10):
        at = now_ms - 5_000 + n
        raw = str(at - 100 * (n + 1)).encode()
        producer.produce(alerts, f"a{n}".encode(), key=f"k{n}".encode(), timestamp=at,
                         headers=[(SOURCE_TIMESTAMP_HEADER, raw)])  # fmt: skip
    producer.produce(alerts, b"no-lineage", timestamp=now_ms - 1_000)
    assert producer.flush(30) == 0

    recent = recent_alert_latency(kafka_bootstrap, alerts, window_s=60)

    assert recent.count == 10
    assert (recent.p50_ms, recent.p99_ms, recent.max_ms) == (500, 1_000, 1_000)


def test_no_alerts_topic_yet_is_a_quiet_minute(kafka_bootstrap, unique_name) -> None:
    recent = recent_alert_latency(kafka_bootstrap, unique_name("missing-alerts"), window_s=60)
    assert recent.count == 0
