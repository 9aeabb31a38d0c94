"""The ``deploy`` benchmark: how fast a new detector alerts, and what its deploy costs the others.

A private mesh (its own MESH_HOME and MESH_TOPIC_PREFIX on the run's broker) runs ``large_amount``
under a steady, paced feed of transactions and logins. The scenario measures large_amount's
records/s over a window before, runs ``mesh deploy detectors/new_country`` as a user would (a
subprocess: validation and dry run included), takes the time until new_country's first alert
appears on the alerts topic, and measures large_amount's records/s from the deploy to a few
seconds after that alert. new_country starts from the earliest offset (its manifest), so its
first alert comes from the backlog as soon as it runs: the figure is the deploy's own latency.
"""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

from confluent_kafka import Consumer

from bench.private_mesh import mesh
from bench.result import Result
from control.cli.topics import apply_declared
from control.deploy.instances import running_instances
from control.deploy.lifecycle import down
from shared.avro import AvroDeserializer
from shared.kafka.config import consumer_config
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames
from testkit.detector_runs import PacedFeed

#: Records per second offered (transactions and logins together).
FEED_RATE = 1000
#: Seconds measured before the deploy, and after the first alert.
WINDOW_S = 8.0
SETTLE_S = 3.0


def _records(settings: Settings, name: str) -> int:
    return sum(int(i.view().report.get("records", 0)) for i in running_instances(settings, name))


def _first_alert_from(settings: Settings, detector: str, deadline_s: float) -> float | None:
    """perf_counter() when an alert of ``detector`` is first seen on the alerts topic."""

    decode = AvroDeserializer("alert").decode
    group = f"bench-deploy-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(consumer_config(settings, group, **{"auto.offset.reset": "earliest"}))
    consumer.subscribe([TopicNames.of(settings).alerts])
    deadline = time.monotonic() + deadline_s
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.1):
                if message.error() is None and decode(message.value())["detector"] == detector:
                    return time.perf_counter()
        return None
    finally:
        consumer.close()


def run_deploy(settings: Settings) -> Result:
    with tempfile.TemporaryDirectory(prefix="mesh-bench-deploy-") as home:
        private = replace(
            settings, home=Path(home), topic_prefix=f"bench.deploy.{uuid.uuid4().hex[:8]}."
        )
        env = {
            "MESH_BOOTSTRAP_SERVERS": private.bootstrap_servers,
            "MESH_HOME": home,
            "MESH_TOPIC_PREFIX": private.topic_prefix,
        }
        apply_declared(private)
        feed = PacedFeed(private, FEED_RATE)
        try:
            mesh(env, "deploy", str(PROJECT_ROOT / "detectors" / "large_amount"))
            feed.start()
            while _records(private, "large_amount") == 0:
                time.sleep(0.2)
            time.sleep(2.0)  # past the first catch-up batch
            before_records, before_at = _records(private, "large_amount"), time.perf_counter()
            time.sleep(WINDOW_S)
            deploy_records, deploy_at = _records(private, "large_amount"), time.perf_counter()
            rate_before = (deploy_records - before_records) / (deploy_at - before_at)
            watcher: list[float | None] = []
            watch = threading.Thread(
                target=lambda: watcher.append(_first_alert_from(private, "new_country", 120))
            )
            watch.start()
            mesh(env, "deploy", str(PROJECT_ROOT / "detectors" / "new_country"))
            deployed_at = time.perf_counter()
            watch.join()
            first_alert = watcher[0]
            time.sleep(SETTLE_S)
            end_records, end_at = _records(private, "large_amount"), time.perf_counter()
        finally:
            feed.stop()
            down(private, say=lambda line: None)
    rate_during = (end_records - deploy_records) / (end_at - deploy_at)
    ratio = rate_during / rate_before if rate_before else 0.0
    to_alert = first_alert - deploy_at if first_alert is not None else float("nan")
    return Result(
        "deploy",
        end_records - deploy_records,
        end_at - deploy_at,
        notes=(
            f"first new_country alert {to_alert:.1f} s after `mesh deploy` "
            f"(command returned after {deployed_at - deploy_at:.1f} s); large_amount "
            f"{rate_during:,.0f}/s during vs {rate_before:,.0f}/s before = {ratio:.2f} "
            f"(feed {FEED_RATE}/s)"
        ),
        extra={
            "seconds_to_first_alert": to_alert,
            "deploy_command_s": deployed_at - deploy_at,
            "throughput_ratio_during_deploy": ratio,
        },
        paced=True,
    )
