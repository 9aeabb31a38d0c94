"""The traced diamond in miniature that the tracing tests share: ingest -> large_amount -> alerts.

Topics under one prefix, the ingest job run in the session's Spark with its spans going to a
Jaeger, and the arguments that run the large_amount detector on the prefixed topics.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka_reading import run_ingest

from services.ingest.config import IngestConfig
from shared.metrics import instance_id
from shared.settings import Settings
from shared.tracing import TracingConfig, setup_tracing


def create_pipeline_topics(create_topics: Callable[..., list[str]], prefix: str) -> None:
    """raw/records transactions (2 partitions), invalid, alerts, dlq, window counts."""
    create_topics([f"{prefix}.{t}" for t in ("raw.transactions", "records.transactions")], 2)
    create_topics([f"{prefix}.{t}" for t in ("records.invalid", "alerts", "detectors.dlq")], 1)
    create_topics([f"{prefix}.metrics.windows"], 1, config={"cleanup.policy": "compact"})


def run_traced_ingest(
    spark: Any,
    settings: Settings,
    otlp_endpoint: str,
    prefix: str,
    checkpoint_dir: Path,
    sample_ratio: float,
) -> list[Any]:
    """Ingest the prefixed raw topics until drained, new traces sampled at ``sample_ratio``,
    spans exported (and flushed) to ``otlp_endpoint``; returns the stopped queries."""
    tracing = setup_tracing(
        "ingest",
        instance_id("ingest-test"),
        config=TracingConfig(endpoint=otlp_endpoint, sample_ratio=sample_ratio),
    )
    config = IngestConfig(
        raw_pattern=f"{prefix}\\.raw\\..*",
        records_prefix=f"{prefix}.records",
        invalid_topic=f"{prefix}.records.invalid",
        windows_topic=f"{prefix}.metrics.windows",
        checkpoint_dir=checkpoint_dir,
        trace_sample_ratio=sample_ratio,
    )
    queries = run_ingest(spark, settings, config, tracing=tracing)
    assert tracing.flush(10), "ingest's spans were not all exported"
    return queries


def large_amount_args(prefix: str) -> list[str]:
    """Runtime arguments that run large_amount on the prefixed topics, in its own group."""
    return [
        "--input", f"transactions={prefix}.records.transactions",
        "--alerts-topic", f"{prefix}.alerts",
        "--dlq-topic", f"{prefix}.detectors.dlq",
        "--group", f"{prefix}.detector.large_amount",
    ]  # fmt: skip
