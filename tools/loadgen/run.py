"""One ``mesh produce`` run: generate, pace, send, write the answer key, report.

Generation and sending are one loop, so memory stays flat however many records are asked for;
the token bucket paces it and the progress bar (on stderr) shows it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from shared.kafka.config import producer_config
from shared.settings import Settings
from tools.loadgen.config import StreamConfig
from tools.loadgen.errors import MissingTopicsError
from tools.loadgen.ground_truth import GroundTruthWriter
from tools.loadgen.producer import DiscardingSink, KafkaSink, RecordSink
from tools.loadgen.rate_limit import TokenBucket
from tools.loadgen.report import ProduceReport, Tally
from tools.loadgen.stream import generate
from tools.loadgen.trace_context import planted_headers

#: Progress bar updates are batched; tqdm per record would cost more than generating it.
PROGRESS_STEP = 1000
#: Headroom above the record-size limit, so that an oversized record still fits the producer.
_MESSAGE_HEADROOM_BYTES = 64 * 1024


@dataclass(frozen=True)
class SendOptions:
    topic_prefix: str = "raw"
    #: Records per second; 0 = as fast as possible.
    rate: float = 0.0
    #: Where to write the ground truth; None = nowhere.
    ground_truth: Path | None = None
    progress: bool = True
    flush_timeout_s: float = 120.0
    #: Planted records carry a sampled ``traceparent`` (tools/loadgen/trace_context.py).
    trace_planted: bool = False
    #: Set, the run sends no further record and finishes as if its count were reached (what
    #: was sent is flushed and reported; the ground truth names only what was sent, each
    #: planted alert with the record that completes its pattern, so a pattern cut short expects
    #: nothing). `mesh produce` sets it on SIGTERM or Ctrl-C.
    stop: threading.Event = field(default_factory=threading.Event, compare=False)


def kafka_sink(settings: Settings, config: StreamConfig) -> KafkaSink:
    """A producer from the project's settings, able to carry the stream's oversized records."""
    overrides: dict[str, Any] = {
        "message.max.bytes": max(1_000_000, config.max_record_bytes + _MESSAGE_HEADROOM_BYTES)
    }
    return KafkaSink(producer_config(settings, **overrides))


def produce(config: StreamConfig, options: SendOptions, sink: RecordSink) -> ProduceReport:
    """Send the stream described by ``config`` to ``sink`` and say what happened."""
    limiter = TokenBucket(options.rate, wait=sink.wait)
    tally = Tally()
    topics = {t: f"{options.topic_prefix}.{t}" for t in config.types}
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        truth = None
        if options.ground_truth is not None:
            truth = stack.enter_context(
                GroundTruthWriter(
                    options.ground_truth, config, options.topic_prefix, options.trace_planted
                )
            )
        bar = stack.enter_context(
            tqdm(
                total=config.count,
                unit="rec",
                unit_scale=True,
                file=sys.stderr,
                disable=not options.progress,
                mininterval=0.5,
            )
        )
        for index, record in enumerate(generate(config), start=1):
            topic = topics[record.topic_suffix]
            limiter.acquire()
            if options.stop.is_set():
                break
            traced = options.trace_planted and record.meta.is_planted
            headers = planted_headers(config.seed, record) if traced else None
            sink.send(topic, record.key, record.value, headers)
            tally.add(topic, record)
            if truth is not None:
                truth.add(record)
            if index % PROGRESS_STEP == 0:
                bar.update(PROGRESS_STEP)
        sent = sum(tally.per_topic.values())
        bar.update(sent - bar.n)
        outcome = sink.finish(options.flush_timeout_s)
    elapsed = time.monotonic() - started
    return ProduceReport(
        per_topic=dict(tally.per_topic),
        valid=tally.valid,
        invalid=tally.invalid,
        planted=tally.planted,
        expected_alerts=tally.expected_alerts,
        invalid_kinds=dict(tally.invalid_kinds),
        bytes=tally.bytes,
        delivered=sum(outcome.delivered.values()),
        failed=outcome.failed,
        errors=tuple(outcome.errors),
        elapsed_s=elapsed,
        dry_run=isinstance(sink, DiscardingSink),
        ground_truth=options.ground_truth,
        stopped_early=options.stop.is_set() and sent < config.count,
        requested=config.count,
    )


def dry_run(config: StreamConfig, options: SendOptions) -> ProduceReport:
    """Generate (and write the ground truth) without Kafka."""
    return produce(config, options, DiscardingSink())


def produce_to_kafka(
    config: StreamConfig, options: SendOptions, settings: Settings
) -> ProduceReport:
    """Generate and send to the Kafka named by ``settings``; its topics must exist."""
    sink = kafka_sink(settings, config)
    missing = sink.missing_topics([f"{options.topic_prefix}.{t}" for t in config.types])
    if missing:
        raise MissingTopicsError(
            f"topic(s) {', '.join(missing)} do not exist: create them with `mesh topics apply` "
            "or choose existing ones with --topic-prefix"
        )
    return produce(config, options, sink)
