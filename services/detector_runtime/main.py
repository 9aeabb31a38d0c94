"""``python -m services.detector_runtime <detector folder or module> [options]``.

Loads the detector and its manifest, checks the topics (co-partitioning for a stateful one,
creates its changelog), then runs the loop until SIGTERM/SIGINT: the current batch is finished
and committed, and the consumer leaves the group, so a rolling restart costs one rebalance and
no reprocessing. Exit codes: 0 stopped on request, 2 configuration refused, 3 error-rate
policy stopped the detector, 1 anything else (the batch in flight was not committed).

With ``--status-file`` (or ``MESH_INSTANCE_STATUS``) the instance keeps a JSON status there (see
:mod:`status`); how it ended is in it too, ``failed`` with the reason for codes 1-3.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from services.detector_runtime.config import (
    DEFAULT_COMMIT_INTERVAL_S,
    DEFAULT_DELIVERY_TIMEOUT_S,
    RuntimeConfig,
    default_topics,
    new_instance_id,
)
from services.detector_runtime.error_policy import ErrorRateExceeded
from services.detector_runtime.gc_tuning import tune_gc
from services.detector_runtime.status import StatusFile, describe
from services.detector_runtime.topology import check_topology, ensure_changelog
from shared.detector import load_detector
from shared.errors import ConfigError, MeshError
from shared.kafka.config import admin_config
from shared.kafka.security import unanswered
from shared.settings import Settings
from shared.topic_names import TopicNames

if TYPE_CHECKING:
    from services.detector_runtime.runner import Runner

log = logging.getLogger("services.detector_runtime")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m services.detector_runtime",
        description="Run one instance of a detector as a Kafka service.",
    )
    p.add_argument("detector", help="detector folder (with manifest.yaml) or module name")
    p.add_argument(
        "--topic-prefix",
        help="prefix for every default topic and group name (default $MESH_TOPIC_PREFIX)",
    )
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="TYPE=TOPIC",
        help="read record type TYPE from TOPIC (default records.<type>)",
    )
    p.add_argument("--alerts-topic", help="default <prefix>alerts")
    p.add_argument("--dlq-topic", help="default <prefix>detectors.dlq")
    p.add_argument("--changelog-topic", help="default <prefix>detector.<name>.changelog")
    p.add_argument("--group", help="consumer group (default <prefix>detector.<name>)")
    p.add_argument("--instance-id", help="a name that outlives the process: a static group "
                   "member that takes its partitions back at once after a restart (default "
                   "<name>-<host>-<pid>-<random>, a dynamic member)")  # fmt: skip
    p.add_argument("--batch-size", type=int, default=2000)
    p.add_argument(
        "--commit-interval-ms",
        type=int,
        default=round(DEFAULT_COMMIT_INTERVAL_S * 1000),
        help="commit processed offsets this often, and once --batch-size records wait "
        f"(default {DEFAULT_COMMIT_INTERVAL_S * 1000:.0f}; 0: every batch)",
    )
    p.add_argument(
        "--delivery-timeout-ms",
        type=int,
        default=round(DEFAULT_DELIVERY_TIMEOUT_S * 1000),
        help="how long an alert, dead letter or state update may wait for its partition's "
        "leader before only its input partition is held back until there is one "
        f"(default {DEFAULT_DELIVERY_TIMEOUT_S * 1000:.0f})",
    )
    p.add_argument("--max-batch-seconds", type=float, default=60.0)
    p.add_argument("--max-poll-interval-ms", type=int, default=300_000)
    p.add_argument("--retries", type=int, default=3, help="retries of a RetriableError (3)")
    p.add_argument("--error-rate-threshold", type=float, default=0.5)
    p.add_argument("--error-window", type=int, default=200, help="records the rate is over")
    p.add_argument("--on-error-rate", choices=("stop", "continue"), default="stop")
    p.add_argument(
        "--consumer-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra librdkafka consumer setting (e.g. session.timeout.ms=6000)",
    )
    p.add_argument(
        "--topic-wait", type=float, default=30.0, help="seconds to wait for missing inputs (30)"
    )
    p.add_argument("--log-interval", type=float, default=10.0, help="seconds between log lines")
    p.add_argument(
        "--status-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="keep the instance's JSON status here (default $MESH_INSTANCE_STATUS; none: no file)",
    )
    p.add_argument("--log-level", default="INFO")
    return p


def arguments(argv: Sequence[str] | None, settings: Settings) -> argparse.Namespace:
    """The command line, with what it leaves out taken from the environment the settings were
    read from (the process reads its environment once): the topic prefix, the status file."""
    args = parser().parse_args(argv)
    if args.topic_prefix is None:
        args.topic_prefix = settings.topic_prefix
    if args.status_file is None and settings.environment.get("MESH_INSTANCE_STATUS"):
        args.status_file = Path(settings.environment["MESH_INSTANCE_STATUS"])
    return args


def build_config(args: argparse.Namespace) -> RuntimeConfig:
    detector, manifest = load_detector(args.detector)
    overrides = _pairs("--input", args.input, "TYPE=TOPIC")
    extra = _pairs("--consumer-config", args.consumer_config, "KEY=VALUE")
    named = {"alerts": args.alerts_topic, "dlq": args.dlq_topic, "changelog": args.changelog_topic}
    topics = replace(
        default_topics(detector, args.topic_prefix or "", overrides),
        **{role: topic for role, topic in named.items() if topic},
    )
    return RuntimeConfig(
        detector=detector,
        manifest=manifest,
        topics=topics,
        group_id=args.group or TopicNames(args.topic_prefix or "").detector_group(detector.name),
        instance_id=args.instance_id or new_instance_id(detector.name),
        static_member=bool(args.instance_id),
        batch_size=args.batch_size,
        batch_wait_s=manifest.batch_wait_ms / 1000,
        commit_interval_s=args.commit_interval_ms / 1000,
        delivery_timeout_s=args.delivery_timeout_ms / 1000,
        max_batch_s=args.max_batch_seconds,
        max_poll_interval_ms=args.max_poll_interval_ms,
        retries=args.retries,
        error_rate_threshold=args.error_rate_threshold,
        error_window=args.error_window,
        error_action=args.on_error_rate,
        log_interval_s=args.log_interval,
        extra_consumer_config=extra,
        topic_wait_s=args.topic_wait,
    )


def _pairs(option: str, items: list[str], form: str) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` options as a dict; a malformed one is one line naming the option."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"{option} {item!r}: expected {form}")
        pairs[key] = value
    return pairs


def start(settings: Settings, config: RuntimeConfig, status: StatusFile | None = None) -> Runner:
    """Check the topology and build a Runner (not yet running)."""

    from services.detector_runtime.runner import Runner

    client = admin_config(settings)
    admin = AdminClient(client)
    try:
        partitions = check_topology(admin, config.detector, config.topics, config.topic_wait_s)
    except KafkaException as error:  # a refused login, or no broker: one line, exit 2
        raise unanswered(admin, client["bootstrap.servers"], error) from None
    if config.detector.stateful:
        ensure_changelog(admin, config.topics.changelog, partitions)
    return Runner(settings, config, status)


def status_file(args: argparse.Namespace) -> StatusFile | None:
    """The status file, named before the detector is loaded so that a refused configuration is
    reported in it too (under the names guessed from the arguments)."""
    if args.status_file is None:
        return None
    target = Path(str(args.detector).rstrip("/"))
    name = (target.parent.name if target.suffix == ".py" else target.name).rsplit(".", 1)[-1]
    return StatusFile(
        args.status_file,
        instance_id=args.instance_id or "",
        detector=name,
        group=args.group or TopicNames(args.topic_prefix or "").detector_group(name),
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings = Settings.from_env()
    except MeshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = arguments(argv, settings)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    status = status_file(args)
    if status is not None:
        status.write()  # `starting` at once: replaces a previous instance's file
    try:
        config = build_config(args)
        if status is not None:
            status.identify(
                instance_id=config.instance_id,
                detector=config.detector.name,
                version=config.detector.version,
                group=config.group_id,
            )
            status.write()
        runner = start(settings, config, status)
    except MeshError as exc:
        if status is not None:
            status.fail(describe(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:
        if status is not None:
            status.fail(describe(exc))
        raise

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: finishing the batch, committing, leaving the group", signum)
        runner.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    tune_gc()
    try:
        runner.run()  # writes `stopped`, or `failed` with the error, to the status file
    except ErrorRateExceeded as exc:
        log.error("%s", exc)
        return 3
    log.info("stopped")
    return 0
