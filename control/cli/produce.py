"""``mesh produce``: send realistic raw records, invalid ones and planted fraud to Kafka.

Wiring, in the CLI's main: ``produce.register(subparsers)``. The sub-command's handler is
``run(args, settings) -> exit code``; bad arguments raise ConfigError (one line: what to fix).
"""

from __future__ import annotations

import argparse
import math
import re
import signal
import sys
import time
from pathlib import Path

from shared.errors import ConfigError
from shared.settings import Settings
from shared.topic_names import RAW, TopicNames
from tools.loadgen.config import StreamConfig
from tools.loadgen.event_time import default_start_ms, effective_pace
from tools.loadgen.fraud import PATTERNS
from tools.loadgen.malformed import DEFAULT_MAX_RECORD_BYTES
from tools.loadgen.run import SendOptions, dry_run, produce_to_kafka
from tools.loadgen.valid_records import RECORD_TYPES

_TOPIC_PREFIX = re.compile(r"[A-Za-z0-9._-]{1,200}")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``produce`` to the ``mesh`` command line."""
    parser = subparsers.add_parser(
        "produce",
        help="send generated raw records (with invalid ones and planted fraud) to Kafka",
        description=(
            "Generate a seeded, reproducible stream of raw transactions and logins, a share of "
            "them deliberately invalid and some arranged as fraud, send it to <prefix>.<type>, "
            "and write a ground-truth file naming the records that must raise alerts."
        ),
    )
    parser.add_argument("--count", type=int, default=10_000, help="records to send (10000)")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="records per second; 0 = as fast as possible"
    )
    parser.add_argument("--seed", type=int, default=42, help="same seed, same records (42)")
    parser.add_argument(
        "--invalid-share", type=float, default=0.02, help="share of invalid records (0.02)"
    )
    parser.add_argument(
        "--fraud-share",
        type=float,
        default=0.005,
        help="approximate share of records in planted fraud patterns (0.005)",
    )
    parser.add_argument(
        "--types",
        default=",".join(RECORD_TYPES),
        help=f"comma-separated record types ({','.join(RECORD_TYPES)})",
    )
    parser.add_argument(
        "--patterns",
        default=",".join(PATTERNS),
        help=f"comma-separated fraud patterns to plant, or 'none' ({','.join(PATTERNS)})",
    )
    parser.add_argument(
        "--topic-prefix",
        default=RAW,
        help="records go to <prefix>.<type> (raw: the mesh's raw topics, under MESH_TOPIC_PREFIX)",
    )
    parser.add_argument(
        "--ground-truth",
        type=Path,
        default=None,
        help="ground-truth file (default: $MESH_HOME/loadgen/ground-truth-seed<S>.jsonl)",
    )
    parser.add_argument(
        "--start-time",
        type=int,
        default=None,
        metavar="EPOCH_MS",
        help="event time of the first record; fix it for byte-identical runs (default: now)",
    )
    parser.add_argument(
        "--event-rate",
        type=float,
        default=None,
        help="records per second of event time (default: --rate, at most 200)",
    )
    parser.add_argument("--customers", type=int, default=20_000, help="population size (20000)")
    parser.add_argument("--merchants", type=int, default=2_000, help="merchants (2000)")
    parser.add_argument(
        "--max-record-bytes",
        type=int,
        default=DEFAULT_MAX_RECORD_BYTES,
        help=f"records above this size are invalid; 'oversized' ones exceed it "
        f"({DEFAULT_MAX_RECORD_BYTES})",
    )
    parser.add_argument(
        "--trace-planted",
        action="store_true",
        help="send planted fraud with a sampled traceparent, as a tracing sender would: every "
        "planted alert then has a trace in the backend (ids in the ground truth)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--dry-run", action="store_true", help="generate and count without sending to Kafka"
    )
    parser.set_defaults(handler=run)


def stream_config(args: argparse.Namespace, now_ms: int | None = None) -> StreamConfig:
    """The stream the arguments describe; ConfigError says which argument to fix."""
    rate = _rate(args.rate)
    pace = effective_pace(args.event_rate, rate)
    if not (math.isfinite(pace) and pace > 0):
        raise ConfigError(f"--event-rate must be a positive number, got {args.event_rate}")
    start = args.start_time
    if start is None:
        if args.count < 0:  # checked properly below; avoid a nonsense start meanwhile
            start = 0
        else:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            start = default_start_ms(now, args.count, pace, rate)
    return StreamConfig(
        start_time_ms=start,
        count=args.count,
        seed=args.seed,
        types=_names(args.types, "--types"),
        invalid_share=args.invalid_share,
        fraud_share=args.fraud_share,
        patterns=() if args.patterns.strip() == "none" else _names(args.patterns, "--patterns"),
        event_rate=pace,
        customers=args.customers,
        merchants=args.merchants,
        max_record_bytes=args.max_record_bytes,
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Produce (or dry-run) and print the outcome; 1 if any record was not delivered."""

    config = stream_config(args)
    if args.topic_prefix == RAW:  # the mesh's own raw topics, wherever its prefix puts them
        args.topic_prefix = TopicNames.of(settings).raw_family
    if not _TOPIC_PREFIX.fullmatch(args.topic_prefix):
        raise ConfigError(
            f"--topic-prefix {args.topic_prefix!r} is not usable in a Kafka topic name: "
            "use letters, digits, '.', '_' or '-'"
        )
    truth = args.ground_truth or settings.home / "loadgen" / f"ground-truth-seed{args.seed}.jsonl"
    options = SendOptions(
        topic_prefix=args.topic_prefix,
        rate=_rate(args.rate),
        ground_truth=truth,
        progress=not args.no_progress,
        trace_planted=args.trace_planted,
    )

    # SIGTERM or Ctrl-C: no further record; what was sent is flushed and reported, as a feed
    # of unknown length (a chaos case's, until its faults are over) needs. A second one
    # interrupts at once ("mesh: interrupted"), as before: the flush may wait for a dead broker.
    def stop_sending(signum: int, _frame: object) -> None:
        options.stop.set()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop_signal, stop_sending)
    if args.dry_run:
        report = dry_run(config, options)
    else:
        report = produce_to_kafka(config, options, settings)
    for line in report.summary():
        print(line)
    if not report.ok:
        print(f"error: {report.failed} records were not delivered:", file=sys.stderr)
        for error in report.errors:
            print(f"  {error}", file=sys.stderr)
        return 1
    return 0


def _rate(value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"--rate must be >= 0 records per second (0 = unlimited), got {value}")
    return value


def _names(text: str, option: str) -> tuple[str, ...]:
    """Comma-separated names, blanks and repeats dropped, order kept; checked by StreamConfig."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ConfigError(f"{option} is empty: name at least one")
    return tuple(dict.fromkeys(names))
