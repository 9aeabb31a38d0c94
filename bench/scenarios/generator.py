"""The load generator's rates: generation alone, and generation sent to Kafka.

Generation alone bounds what ``mesh produce`` can offer the mesh on one core; the Kafka run shows
what reaches the broker with every record acknowledged (the broker shares the two cores).
"""

from __future__ import annotations

import time
import uuid

from bench.kafka_fixture import create_topic
from bench.result import Result
from shared.settings import Settings
from tools.loadgen import SendOptions, StreamConfig, dry_run, produce_to_kafka

COUNT = 200_000


def _config(count: int) -> StreamConfig:
    # A fixed start time: the same bytes every run, so runs compare.
    return StreamConfig(start_time_ms=1_790_000_000_000, count=count, seed=7)


def run_generate(settings: Settings, count: int = COUNT) -> Result:
    """Records/s generated and serialised to JSON, without Kafka."""
    started = time.perf_counter()
    report = dry_run(_config(count), SendOptions(progress=False))
    seconds = time.perf_counter() - started
    return Result("generate", report.total, seconds, notes="mesh produce --dry-run, one core")


def run_produce(settings: Settings, count: int = COUNT) -> Result:
    """Records/s from the generator into Kafka, all acknowledged (idempotent producer)."""
    prefix = f"bench.produce.{uuid.uuid4().hex[:8]}"
    for record_type in ("transactions", "logins"):
        create_topic(settings, "", 8, name=f"{prefix}.{record_type}")
    started = time.perf_counter()
    report = produce_to_kafka(
        _config(count), SendOptions(topic_prefix=prefix, progress=False), settings
    )
    seconds = time.perf_counter() - started
    failed = f", {report.failed} FAILED" if report.failed else ""
    return Result(
        "produce", report.delivered, seconds, notes=f"mesh produce to 8 partitions{failed}"
    )
