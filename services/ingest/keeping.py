"""The ingest job's queries kept through what they cannot help (issue 48): each started under a
:class:`~shared.spark_query_keeper.QueryKeeper`, which holds a query that stopped for want of a
leader instead of failing the job, and routing with a
:class:`~services.ingest.routing_degrade.RoutingDegrade`, which hands it over without a raw
partition that lost its leader. What they wait for goes to the status file (`mesh status`).
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable

from confluent_kafka.admin import AdminClient
from pyspark.sql.streaming import StreamingQuery

from services.ingest.config import IngestConfig
from services.ingest.handover_marks import Ends
from services.ingest.routing_degrade import ROUTING_QUERY, RoutingDegrade
from services.ingest.trigger_mode import batch_wait_s
from shared.endpoints import resolve_bootstrap
from shared.json_files import read_json, write_json_atomic
from shared.kafka.inspect import partition_watermarks
from shared.kafka.security import client_security
from shared.service_files import ingest_status_file
from shared.settings import Settings
from shared.spark_query_keeper import QueryKeeper, Uses


def keep_queries(
    settings: Settings,
    config: IngestConfig,
    starters: dict[str, Callable[[], StreamingQuery]],
    client: AdminClient,
    stopping: threading.Event,
) -> tuple[QueryKeeper, RoutingDegrade]:
    """The job's queries started (``starters``, by name), under a keeper, and routing's
    handovers; ``client`` asks the cluster for leaders; a handover waiting for a batch's end
    gives up on ``stopping`` (the job's own stop waits for one too)."""
    degrade = RoutingDegrade(config.checkpoints(settings), config.raw_pattern,
                             starters[ROUTING_QUERY], _routed_ends(settings, config, client),
                             batch_wait_s(config.checkpoint_interval), _say,
                             config.starting_offsets, stopping.is_set)  # fmt: skip
    return QueryKeeper(starters, query_partitions(config, degrade.reads), client, _say), degrade


def query_partitions(config: IngestConfig, routing_reads: Uses) -> dict[str, Uses]:
    """Which partitions each of the job's queries reads or writes (the keeper holds a query back
    while one of them has no leader): routing the raw ones it reads (``routing_reads``: not
    those a handover holds), the records topics' and the dead letters'; the counts and the span
    export every raw partition, the counts their windows topic's too."""
    raw = re.compile(config.raw_pattern)
    records = config.records_prefix + "."

    def reads(topic: str, n: int) -> bool:
        return raw.fullmatch(topic) is not None

    def routing(topic: str, n: int) -> bool:
        written = topic.startswith(records) or topic == config.invalid_topic
        return written or routing_reads(topic, n)

    return {
        ROUTING_QUERY: routing,
        "ingest-counts": lambda t, n: reads(t, n) or t == config.windows_topic,
        "ingest-traces": reads,
    }


def _routed_ends(
    settings: Settings, config: IngestConfig, client: AdminClient
) -> Callable[[], Ends | None]:
    """How to read the high watermark of every partition routing writes to (a handover's mark:
    :mod:`services.ingest.handover_marks`); None when the cluster does not answer."""
    records = config.records_prefix + "."

    def read() -> Ends | None:
        try:
            names = [name for name in client.list_topics(timeout=10).topics
                     if name.startswith(records) or name == config.invalid_topic]  # fmt: skip
            found = partition_watermarks(resolve_bootstrap(settings), names,
                                         login=client_security(settings))  # fmt: skip
        except Exception:  # any failure: no mark, the handover goes on
            return None
        return {(topic, n): high for topic, parts in found.items()
                for n, (_, high) in parts.items()}  # fmt: skip

    return read


def _say(line: str) -> None:
    print(f"ingest: {line}", file=sys.stderr, flush=True)


def show_waiting(settings: Settings) -> Callable[[list[str]], None]:
    """Writes what the queries wait for into the status file (`mesh status`: held back) and on
    stderr."""

    def show(waiting: list[str]) -> None:
        status_file = ingest_status_file(settings.home)
        status = read_json(status_file) or {}
        write_json_atomic(status_file, {**status, "waiting": waiting, "updated": time.time()})
        for line in waiting:
            print(f"ingest: held back: {line}", file=sys.stderr, flush=True)

    return show
