"""The ingest job: Kafka raw topics -> validation -> routing and window counts.

Run it with ``python -m services.ingest.job`` (what ``mesh up`` does), or submit it unchanged to a
cluster (docs/ingest.md). Two streaming queries share one SparkSession:

  routing  raw -> classify -> records.<type> | records.invalid     (stateless, Kafka sink;
                                                                     real-time mode where it can)
  counts   raw -> classify -> 1 s windows -> metrics.windows        (stateful, micro-batch)

Both checkpoint under ``$MESH_HOME/ingest/checkpoints``: after a crash they resume from the last
committed batch (a real-time batch is one checkpoint interval), so every raw record is routed at
least once and window counts stay exact. :mod:`services.ingest.trigger_mode` decides how routing
runs and sizes the local master for it.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from services.ingest import routing_handover as handover
from services.ingest.checkpoint_conf import checkpointed_shuffle_partitions
from services.ingest.checkpoint_repair import clear_interrupted_writes
from services.ingest.config import IngestConfig
from services.ingest.data_loss import (
    DataLossError,
    SkippedRange,
    find_skipped,
    query_checkpoints,
    summary,
)
from services.ingest.inputs import REQUEST_TIMEOUT_MS, IngestInputs
from services.ingest.keeping import keep_queries, show_waiting
from services.ingest.metrics import IngestMetricsListener, observe_outcomes
from services.ingest.routing import route
from services.ingest.routing_degrade import ROUTING_QUERY, RoutingDegrade
from services.ingest.scheduling import in_default_pool, in_routing_pool, scheduler_options
from services.ingest.trace_export import start_trace_export
from services.ingest.trigger_mode import (
    AUTO_MASTER,
    TriggerPlan,
    await_batch_end,
    batch_wait_s,
    checkpoint_seconds,
    master_for,
    outgrown,
    past_gap,
    plan,
    raw_partitions,
)
from services.ingest.validation import ERROR
from services.ingest.warmup import said, warm_routing
from services.ingest.windows import classify_window, count_windows, window_records
from shared.endpoints import resolve_bootstrap
from shared.errors import MeshError
from shared.json_files import read_json, write_json_atomic
from shared.kafka.config import admin_config
from shared.kafka.security import unanswered
from shared.metrics import MetricRegistry, MetricsReporter, add_process_gauges, instance_id
from shared.service_files import ingest_mode_file, ingest_status_file
from shared.settings import Settings
from shared.spark_query_keeper import QueryKeeper
from shared.spark_session import spark_session, stop_spark
from shared.tracing import Tracing, setup_tracing
from shared.tracing.stats import add_tracing_gauges

#: Producer settings of both sinks: no duplicates from retries, dead letters up to 4 MiB, and a
#: hung broker given up on after one request deadline (REQUEST_TIMEOUT_MS, not Kafka's 30 s):
#: every batch of real-time routing ends with a flush, which waited out the in-flight requests to
#: a SIGSTOPped leader, so all of routing stopped for 30 s though its leaders had moved (issue 48).
SINK_OPTIONS = {
    "kafka.request.timeout.ms": str(REQUEST_TIMEOUT_MS),
    "kafka.enable.idempotence": "true",
    "kafka.acks": "all",
    "kafka.linger.ms": "5",
    "kafka.compression.type": "lz4",
    "kafka.max.request.size": str(5 * 1024 * 1024),
}


def _kafka_sink(frame: DataFrame, inputs: IngestInputs, checkpoint: str, name: str):  # type: ignore[no-untyped-def]
    writer = frame.writeStream.format("kafka").option("kafka.bootstrap.servers", inputs.bootstrap)
    for key, value in {**SINK_OPTIONS, **inputs.kafka_options}.items():
        writer = writer.option(key, value)
    return writer.option("checkpointLocation", checkpoint).queryName(name)


def _real_time(writer, interval: str):  # type: ignore[no-untyped-def]
    """``writer`` with Spark's real-time trigger (pyspark 4.2's ``trigger(realTime=...)``):
    ``interval`` is how often its long-running batch ends and checkpoints. Real-time mode
    requires update mode."""
    return writer.trigger(realTime=interval).outputMode("update")


def start_routing(
    spark: SparkSession,
    settings: Settings,
    config: IngestConfig,
    instance_id: str,
    trigger: TriggerPlan | None = None,
    inputs: IngestInputs | None = None,
) -> StreamingQuery:
    """raw -> classify -> records.<type> | records.invalid (stateless), real-time if planned."""
    inputs = inputs or IngestInputs.load(settings)
    real_time = trigger is not None and trigger.real_time
    raw = inputs.raw(spark, config, real_time, handover.load(config.checkpoints(settings)))
    routed = route(
        observe_outcomes(inputs.classified(raw, config), F.col(ERROR)),
        inputs.types,
        inputs.catalogue,
        config.records_prefix,
        config.invalid_topic,
        instance_id,
        config.trace_sample_ratio,
    )
    checkpoint = str(config.checkpoints(settings) / "routing")
    writer = _kafka_sink(routed, inputs, checkpoint, ROUTING_QUERY)
    if real_time:
        writer = _real_time(writer, config.checkpoint_interval)
    else:
        writer = writer.trigger(processingTime=config.trigger)
    in_routing_pool(spark)  # its batches take freed task slots first (scheduling.py)
    try:
        return writer.start()
    finally:
        in_default_pool(spark)


def start_counting(
    spark: SparkSession,
    settings: Settings,
    config: IngestConfig,
    inputs: IngestInputs | None = None,
) -> StreamingQuery:
    """raw -> classify -> 1 s windows -> metrics.windows (stateful, update mode)."""
    inputs = inputs or IngestInputs.load(settings)
    classified = inputs.classified(inputs.side_raw(spark, config), config)
    placed = classify_window(classified, config.allowed_lateness_ms)
    windows = window_records(
        count_windows(placed, config.watermark_delay), inputs.catalogue, config.windows_topic
    )
    checkpoint = str(config.checkpoints(settings) / "counts")
    sink = _kafka_sink(windows, inputs, checkpoint, "ingest-counts")
    return sink.trigger(processingTime=config.counting_trigger).outputMode("update").start()


def as_checkpointed(config: IngestConfig, settings: Settings) -> IngestConfig:
    """``config`` with the window counts' shuffle partitions their checkpoint keeps, if it has
    any (services.ingest.checkpoint_conf): the slots the job sizes must fit the query it runs."""
    kept = checkpointed_shuffle_partitions(config.checkpoints(settings) / "counts")
    if kept is None or kept == config.shuffle_partitions:
        return config
    print(f"ingest: window counts keep their checkpoint's {kept} shuffle partitions "
          f"(configured {config.shuffle_partitions})", flush=True)  # fmt: skip
    return replace(config, shuffle_partitions=kept)


def plan_trigger(spark: SparkSession, settings: Settings, config: IngestConfig) -> TriggerPlan:
    """How routing runs in ``spark``: its task slots against the raw partitions there are now."""
    slots = spark.sparkContext.defaultParallelism
    return plan(config.mode, count_raw_partitions(settings, config), slots, config.side_slots)


def admin_client(settings: Settings) -> AdminClient:
    return AdminClient(admin_config(settings, log_level=2))  # errors: where it is asked


def count_raw_partitions(settings: Settings, config: IngestConfig) -> int:
    admin = admin_client(settings)
    try:
        topics = admin.list_topics(timeout=10).topics
    except KafkaException as exc:  # a refused login, or no broker: one line
        raise unanswered(admin, resolve_bootstrap(settings), exc) from None
    return raw_partitions({n: len(t.partitions) for n, t in topics.items()}, config.raw_pattern)


def query_starters(
    spark: SparkSession,
    settings: Settings,
    config: IngestConfig,
    instance_id: str,
    tracing: Tracing | None = None,
    trigger: TriggerPlan | None = None,
    inputs: IngestInputs | None = None,
) -> dict[str, Callable[[], StreamingQuery]]:
    """How to start each of the job's queries, by name, routing first; ``ingest-traces`` too
    when tracing is on. Routing runs as ``trigger`` says (default: as :func:`plan_trigger`
    decides for ``spark``)."""
    trigger = trigger or plan_trigger(spark, settings, config)
    inputs = inputs or IngestInputs.load(settings)  # one catalogue for every query
    starters: dict[str, Callable[[], StreamingQuery]] = {
        ROUTING_QUERY: lambda: start_routing(spark, settings, config, instance_id, trigger, inputs),
        "ingest-counts": lambda: start_counting(spark, settings, config, inputs),
    }
    if tracing is not None and tracing.enabled:
        live = tracing

        def traces() -> StreamingQuery:
            checkpoint = str(config.checkpoints(settings) / "traces")
            raw = inputs.side_raw(spark, config)
            return start_trace_export(spark, raw, inputs.types, config, checkpoint, live)

        starters["ingest-traces"] = traces
    return starters


def start_queries(
    spark: SparkSession,
    settings: Settings,
    config: IngestConfig,
    instance_id: str,
    tracing: Tracing | None = None,
    trigger: TriggerPlan | None = None,
) -> list[StreamingQuery]:
    """The job's queries, started (see :func:`query_starters`)."""
    starters = query_starters(spark, settings, config, instance_id, tracing, trigger)
    return [start() for start in starters.values()]


def _report(keeper: QueryKeeper, stop: threading.Event, every_s: float = 10.0) -> None:
    """A JSON progress line per query every ``every_s`` seconds (records/s, batch duration)."""
    while not stop.wait(every_s):
        for query in list(keeper.queries.values()):
            try:
                progress = query.lastProgress
                if not progress:
                    continue
                line = {
                    "query": query.name,
                    "batch": progress["batchId"],
                    "input_rows": progress["numInputRows"],
                    "input_rows_per_s": round(progress["inputRowsPerSecond"] or 0.0, 1),
                    "processed_rows_per_s": round(progress["processedRowsPerSecond"] or 0.0, 1),
                    "trigger_ms": progress["durationMs"].get("triggerExecution"),
                }
            except Exception as exc:  # a reporting hiccup must never stop the job
                line = {"query": query.name, "report_error": repr(exc)}
            print(json.dumps(line), flush=True)


#: Seconds between two looks at the raw topics' partition count (see trigger_mode.outgrown).
PARTITION_CHECK_S = 10.0
#: Exit code of a job that stops so its supervisor starts it again (resized, or after a failure).
RESTART = 3


def main() -> int:
    settings = Settings.from_env()
    stopping = threading.Event()
    try:
        config = IngestConfig.from_settings(settings)
        instance = instance_id("ingest")
        partitions = count_raw_partitions(settings, config)
        repair_checkpoints(config.checkpoints(settings))
        config = as_checkpointed(config, settings)
        skipped = check_data_loss(settings, config)
        # Under spark-submit (which starts the JVM and sets PYSPARK_GATEWAY_PORT) the --master
        # given there wins; run directly, the job uses MESH_INGEST_MASTER (auto: sized here).
        submitted = "PYSPARK_GATEWAY_PORT" in settings.environment
        master = None if submitted else master_for(config.master, partitions, config.side_slots)
        scheduler = scheduler_options(settings.home / "ingest", partitions)
        spark = spark_session("detector-mesh-ingest", settings, master, config.shuffle_partitions,
                              scheduler)  # fmt: skip
        slots = spark.sparkContext.defaultParallelism
        trigger = plan(config.mode, partitions, slots, config.side_slots)
        routing_gap = sum(gap.count for gap in skipped if gap.query == "routing")
        if routing_gap:
            trigger = past_gap(trigger, routing_gap)
        print(f"ingest: {trigger.line()}", flush=True)
        saved = {**trigger.as_json(), "master": spark.sparkContext.master}
        print(json.dumps(saved), flush=True)
        write_json_atomic(ingest_mode_file(settings.home), saved)
        registry = MetricRegistry(service="ingest", instance_id=instance)
        add_process_gauges(registry)
        spark.streams.addListener(IngestMetricsListener(registry))
        report_data_loss(settings, skipped, registry)
        tracing = setup_tracing("ingest", instance, None, settings)
        if tracing.enabled:  # the ingest-traces query exports through this handle
            add_tracing_gauges(registry, tracing.stats)
        inputs = IngestInputs.load(settings)
        took = warm_routing(spark, inputs, config, instance, config.warmup_rounds)
        if took:
            print(said(took), flush=True)
        starters = query_starters(spark, settings, config, instance, tracing, trigger, inputs)
        keeper, degrade = keep_queries(settings, config, starters, admin_client(settings),
                                       stopping)  # fmt: skip
        show_waiting(settings)([])  # a wait of an earlier run is over
    except MeshError as exc:
        print(f"ingest: error: {exc}", file=sys.stderr)
        return 2
    metrics = MetricsReporter.for_settings(registry, settings)
    metrics.start()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    reporter = threading.Thread(target=_report, args=(keeper, stopping), daemon=True)
    reporter.start()
    print(f"ingest: {instance} running queries {list(keeper.queries)}", flush=True)
    auto_master = not submitted and config.master == AUTO_MASTER
    resize = lambda: (_outgrown(settings, config, trigger, auto_master)  # noqa: E731
                      or _gap_passed(settings, config, trigger))  # fmt: skip
    code, graceful = _watch(keeper, degrade, stopping, resize, show_waiting(settings))
    queries = keeper.queries
    if graceful and trigger.real_time and queries[ROUTING_QUERY].isActive:
        _await_checkpoint(queries[ROUTING_QUERY], config)
    for query in queries.values():
        query.stop()
    metrics.close()
    tracing.shutdown()
    stop_spark(spark, keep_archive=graceful)  # a failure's restart is not held up
    print("ingest: stopped", flush=True)
    return code


#: Skipped ranges the status file keeps (the newest), so it stays small however often it happens.
KEPT_RANGES = 50


def repair_checkpoints(checkpoints: Path) -> None:
    """Clear what a kill or a full disk mid-write left in the queries' checkpoints, which would
    otherwise stop them from starting again (:mod:`services.ingest.checkpoint_repair`)."""
    for folder in query_checkpoints(checkpoints).values():
        for path in clear_interrupted_writes(folder):
            print(f"ingest: removed {path.relative_to(checkpoints)}, left by a job that died "
                  "while writing its checkpoint (killed, or its disk full)", file=sys.stderr,
                  flush=True)  # fmt: skip


def check_data_loss(settings: Settings, config: IngestConfig) -> list[SkippedRange]:
    """Before the queries resume (and before a Spark session is spent on a job that must not
    start): the raw records retention removed since they last read. With
    ``MESH_INGEST_ON_DATA_LOSS=fail`` a loss is :class:`DataLossError`, also kept as the status
    file's ``last_error`` (the supervisor gives it as the reason the job exited); see
    :mod:`services.ingest.data_loss`."""
    skipped = find_skipped(config.checkpoints(settings), admin_config(settings, log_level=2))
    status_file = ingest_status_file(settings.home)
    status = read_json(status_file) or {}
    if skipped and config.fail_on_data_loss:
        message = (f"data loss: {summary(skipped)}; to start past them, run once with "
                   "MESH_INGEST_ON_DATA_LOSS=report")  # fmt: skip
        write_json_atomic(status_file, {**status, "last_error": message, "updated": time.time()})
        raise DataLossError(message)
    if status.pop("last_error", None) is not None:  # it starts now: the refusal is history
        write_json_atomic(status_file, status)
    return skipped


def report_data_loss(
    settings: Settings, skipped: list[SkippedRange], registry: MetricRegistry
) -> None:
    """Each skipped range on stderr, in the status file (`mesh status` shows it; the newest
    KEPT_RANGES are kept) and in ``ingest.records.skipped``, tagged with its query; once (a range
    an earlier start reported is not counted again)."""
    status_file = ingest_status_file(settings.home)
    status = read_json(status_file) or {}
    known = [*status.get("data_loss", []), *status.get("data_loss_acknowledged", [])]
    skipped = [gap for gap in skipped if not _reported(gap, known)]
    if not skipped:
        return
    now = time.time()
    for gap in skipped:
        print(f"ingest: DATA LOSS: {gap.line()}", file=sys.stderr, flush=True)
        tags = {"query": f"ingest-{gap.query}"}
        registry.counter("ingest.records.skipped", tags=tags).inc(gap.count)
    ranges = [*status.get("data_loss", []), *({**gap.as_json(), "at": now} for gap in skipped)]
    write_json_atomic(status_file, {**status, "data_loss": ranges[-KEPT_RANGES:], "updated": now})


def _reported(gap: SkippedRange, reported: list[dict[str, Any]]) -> bool:
    """Whether an earlier start reported a range holding all of ``gap`` (a job restarted before
    its query got past a gap finds the rest of it again: the same records, not a new loss)."""
    return any(
        r["query"] == gap.query and r["topic"] == gap.topic and r["partition"] == gap.partition
        and r["first"] <= gap.first and gap.end <= r["end"]
        for r in reported
    )  # fmt: skip


def _await_checkpoint(routing: StreamingQuery, config: IngestConfig) -> None:
    """Let the real-time routing batch that runs now finish and commit before stopping.

    Stopping cancels a real-time batch, and a restart replays all of it (up to a checkpoint
    interval of records, routed again). Waiting for the batch's end instead means the stop comes
    as the next batch starts, with next to nothing routed and uncommitted. Bounded by the
    interval plus the seconds a hand-over takes, within the supervisor's stop timeout (50 s)."""
    interval = checkpoint_seconds(config.checkpoint_interval)
    print(f"ingest: stopping at routing's next checkpoint (at most {interval:.0f} s away)",
          flush=True)  # fmt: skip
    await_batch_end(routing, batch_wait_s(config.checkpoint_interval))


def _outgrown(
    settings: Settings, config: IngestConfig, trigger: TriggerPlan, auto_master: bool
) -> str | None:
    try:
        now = count_raw_partitions(settings, config)
    except Exception:  # the broker may be away for a while; the queries say so themselves
        return None
    return outgrown(trigger, now, auto_master)


def _gap_passed(settings: Settings, config: IngestConfig, trigger: TriggerPlan) -> str | None:
    """Why the job restarts once routing, run micro-batch to get past a retention gap
    (:func:`services.ingest.trigger_mode.past_gap`), has committed past all of it (a gap wider
    than a micro-batch's ``max_offsets_per_trigger`` takes several batches)."""
    if not trigger.passing_gap:
        return None
    try:
        left = find_skipped(config.checkpoints(settings), admin_config(settings, log_level=2))
    except Exception:  # the broker may be away for a while: look again later
        return None
    if any(gap.query == "routing" for gap in left):
        return None
    return "routing got past the records retention removed: restarting in real-time mode"


def _watch(
    keeper: QueryKeeper,
    degrade: RoutingDegrade,
    stopping: threading.Event,
    resize: Callable[[], str | None],
    status: Callable[[list[str]], None],
) -> tuple[int, bool]:
    """Wait for SIGTERM (exit 0), a query that stopped for good or raw partitions the plan no
    longer fits (RESTART: the supervisor starts the job again, from its checkpoints); and
    whether the queries are still healthy enough to stop gracefully (not after a failure). A
    query that stopped on a known Spark fault, or for want of a leader, is kept by ``keeper``
    (:mod:`shared.spark_query_keeper`) without a restart of the job, routing handed over
    without the raw partitions that have no leader (``degrade``); what they wait for goes to
    ``status`` whenever that changes."""
    next_check = time.monotonic() + PARTITION_CHECK_S
    shown: list[str] = []
    while not stopping.wait(0.5):
        failure = keeper.look()
        if failure:
            print(f"ingest: {failure}", file=sys.stderr, flush=True)
            return RESTART, False
        degrade.look(keeper)
        waiting = degrade.waiting() + keeper.waiting()
        if waiting != shown:
            shown = waiting
            status(waiting)
        if time.monotonic() >= next_check:
            next_check = time.monotonic() + PARTITION_CHECK_S
            why = resize()
            if why:
                print(f"ingest: {why}", file=sys.stderr, flush=True)
                return RESTART, True
    return 0, True


if __name__ == "__main__":
    raise SystemExit(main())
