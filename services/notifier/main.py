"""``python -m services.notifier [options]``: deliver alerts as notifications until SIGTERM/SIGINT.

Exit codes: 0 stopped on request, 1 Kafka refused what it wrote (nothing unwritten was committed:
the next start takes it again), 2 bad options, settings or rules file (one line on stderr).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from services.notifier.config import NotifierConfig
from services.notifier.rules import Routing, load_rules
from shared.errors import ConfigError, MeshError
from shared.kafka.changelog import ensure_changelog
from shared.kafka.config import admin_config
from shared.kafka.security import unanswered
from shared.kafka.static_membership import ConsumerFenced
from shared.metrics import MetricRegistry, MetricsReporter, add_process_gauges, instance_id
from shared.service_cli import ServiceArgumentParser, parse_service_args
from shared.service_files import NOTIFIER as NAME
from shared.service_files import notifier_status_file
from shared.settings import Settings

log = logging.getLogger("services.notifier")


def parser() -> argparse.ArgumentParser:
    about = "Deliver the mesh's alerts to the channels its rules name, once."
    p = ServiceArgumentParser(prog="python -m services.notifier", description=about)
    p.add_argument("--rules", type=Path, help="routing file (default MESH_NOTIFIER_RULES)")
    p.add_argument("--status-file", type=Path, help=f"default $MESH_HOME/{NAME}/status.json")
    p.add_argument("--instance-id", help="a name that outlives the process: a static group "
                   "member that takes its partitions back at once after a restart (default "
                   "notifier@<host>:<pid>:<start ms>, a dynamic member)")  # fmt: skip
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_service_args(parser(), argv, NAME)
    if isinstance(args, int):
        return args
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = Settings.from_env()
        config = NotifierConfig.from_settings(settings)
        routing = load_rules(args.rules or config.rules)
        return run(settings, config, routing, args.status_file, args.instance_id)
    except MeshError as error:
        print(f"{NAME}: error: {error}", file=sys.stderr)
        return 2


def run(
    settings: Settings,
    config: NotifierConfig,
    routing: Routing,
    status_file: Path | None,
    instance: str | None,
) -> int:
    """Check the topics, then run the loop until a signal."""

    from services.notifier.outputs import OutputError
    from services.notifier.service import Notifier
    from shared.avro import load_catalogue
    from shared.tracing import setup_tracing, shutdown

    named = instance is not None  # a name that outlives the process: a static member
    instance = instance or instance_id(NAME)
    admin = AdminClient(admin_config(settings, log_level=2))  # the one line below says it all
    try:
        topics = admin.list_topics(timeout=10).topics
    except KafkaException as error:
        raise unanswered(admin, admin_config(settings)["bootstrap.servers"], error) from None
    alerts = topics.get(config.names.alerts)
    if alerts is None or alerts.error is not None:
        raise ConfigError(f"topic {config.names.alerts} does not exist: run `mesh topics apply`")
    for needed in (config.names.notifications, config.names.notifications_dlq):
        if needed not in topics:
            raise ConfigError(f"topic {needed} does not exist: run `mesh topics apply`")
    ensure_changelog(admin, config.names.notifier_changelog, len(alerts.partitions))

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    registry = MetricRegistry(NAME, instance)
    add_process_gauges(registry)
    reporter = MetricsReporter.for_settings(registry, settings)
    tracing = setup_tracing(NAME, instance, None, settings)
    status_file = status_file or notifier_status_file(settings.home)
    catalogue = load_catalogue(settings.schemas_dir)
    notifier = Notifier(settings, config, routing, instance, catalogue, tracing, registry,
                        status_file, static_member=named)  # fmt: skip
    reporter.start()
    log.info("%s delivering %s to %s", instance, config.names.alerts,
             ", ".join(routing.channels))  # fmt: skip
    try:
        notifier.run(stopping)
    except (OutputError, ConsumerFenced) as error:
        # A fenced consumer (shared/kafka/static_membership.py): the supervisor starts a new
        # process, which joins under the same name and takes the partitions back.
        log.error("%s", error)
        notifier.figures.last_error = str(error)
        notifier.figures.write(instance, "failed", force=True)
        return 1
    finally:
        reporter.close()
        shutdown()
    log.info("stopped")
    return 0
