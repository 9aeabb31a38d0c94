"""The frame the metrics cases share: detector instances reporting every second under the smoke
load, the metrics aggregator as the real supervised service (as `mesh up` runs it), a private
InfluxDB, and the totals read back from it.

*Totals* are what an operator charts: the latest ``count`` of every counted series (each
metric's ``scope=all`` total and each instance's own series), by measurement and tags. The
aggregator's own series are left out: each aggregator run reports under its own instance id, so
two runs differ there by construction.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from control.launch.aggregator import aggregator_process, start_aggregator
from control.supervised_service import supervised_child
from hosting.servers.influx import LocalInflux, installed
from services.metrics_aggregator.config import status_path
from shared.json_files import read_json
from shared.kafka.config import consumer_config
from shared.kafka.inspect import watermarks
from shared.settings import Settings
from testkit.detector_runs import read_to_end
from testkit.influx_query import query
from testkit.service_kill import halt_service

#: Seconds between two metric snapshots of every instance in these cases.
REPORT_EVERY_S = 1
#: The instance env that makes them report that often.
REPORTING = {"MESH_METRICS_INTERVAL_S": str(REPORT_EVERY_S)}
#: The service whose series are not compared (see the module's docstring).
AGGREGATOR_SERVICE = "metrics_aggregator"

Totals = dict[tuple[str, tuple[tuple[str, str], ...]], int]


def private_influx(work: Path) -> LocalInflux:
    """A real InfluxDB of the case's own (installed first if missing, as `make test` does)."""
    if not installed():
        done = subprocess.run([sys.executable, "-m", "hosting.servers.influx_install"],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0 or not installed():
            raise RuntimeError(f"InfluxDB is needed and could not be installed: {done.stdout}")
    settings = replace(Settings.from_env(), home=work / "influx", influx_port=0)
    server = LocalInflux(settings)
    server.start()
    return server


def aggregator_settings(base: Settings, home: Path, influx_url: str, database: str) -> Settings:
    """The aggregator's settings: the case's topics, its own MESH_HOME (process, checkpoint,
    status), and where its points go."""
    return replace(base, home=home, influx_url=influx_url, influx_db=database)


#: The aggregator's batch interval in these cases, where every instance reports each second (a
#: mesh's aggregator batches once per reporting interval, 10 s by default).
AGGREGATE_EVERY_S = 2.0


def start(settings: Settings) -> None:
    _, started = start_aggregator(settings, trigger_s=AGGREGATE_EVERY_S)
    if not started:
        raise RuntimeError(
            f"the aggregator did not start: {aggregator_process(settings).tail_log(5)}"
        )


def wait_caught_up(settings: Settings, quiet_s: float = 8.0, timeout_s: float = 180.0) -> dict:
    """Until the aggregator has consumed nothing new for ``quiet_s`` with its InfluxDB buffer
    empty (its inputs are quiet by then); its status document."""

    last, since, deadline = None, time.monotonic(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = read_json(status_path(settings)) or {}
        influx = status.get("influx") or {}
        now = (status.get("snapshots_in"), influx.get("written"))
        if now != last or influx.get("buffered"):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s and status.get("snapshots_in"):
            return status
        time.sleep(1)
    raise TimeoutError(f"the aggregator did not catch up in {timeout_s:.0f} s: {last}")


def totals(influx_url: str, database: str) -> Totals:
    """The latest ``count`` of every series in ``database`` (see the module's docstring)."""
    found: Totals = {}
    for row in query(influx_url, database, "SHOW MEASUREMENTS"):
        name = row["name"]
        escaped = name.replace('"', '\\"')
        for point in query(
            influx_url, database, f'SELECT last("count") FROM "{escaped}" GROUP BY *'
        ):
            tags = {k: v for k, v in point.items() if k not in ("time", "last") and v}
            if tags.get("service") == AGGREGATOR_SERVICE or point.get("last") is None:
                continue
            found[(name, tuple(sorted(tags.items())))] = int(point["last"])
    return found


def differences(first: Totals, second: Totals, limit: int = 3) -> list[str]:
    """How two sets of totals differ (a few examples), or nothing when they are the same."""
    found = []
    for key in sorted(set(first) | set(second)):
        if first.get(key) != second.get(key):
            found.append(f"{key[0]} {dict(key[1])}: {first.get(key)} vs {second.get(key)}")
    return found[:limit] + ([f"and {len(found) - limit} more"] if len(found) > limit else [])


def rebuild(
    first: Settings, rebuilt: Settings, failures: list[str]
) -> tuple[Totals, Totals, float]:
    """Stop the ``first`` aggregator, rebuild from scratch as ``rebuilt`` (its own MESH_HOME,
    so a fresh checkpoint; its own database) and compare: (the first's totals, the rebuild's,
    seconds the rebuild took). What differs is added to ``failures``."""
    stop(first)
    started = time.monotonic()
    start(rebuilt)
    wait_caught_up(rebuilt)
    seconds = time.monotonic() - started
    url = rebuilt.influx_url  # both write to the one InfluxDB (the first through its gate)
    before, after = totals(url, first.influx_db), totals(url, rebuilt.influx_db)
    failures += [f"totals differ: {d}" for d in differences(before, after)]
    if not before:
        failures.append("no totals in InfluxDB")
    return before, after, seconds


def stop(settings: Settings) -> None:
    """The aggregator ended at once (:func:`testkit.service_kill.halt_service`): a case stops it
    once what it wrote is in InfluxDB, where the case reads it."""
    halt_service(aggregator_process(settings))


def supervised_restart_reason(settings: Settings) -> str | None:
    """How the aggregator's supervisor says its last run ended, if it restarted it exactly
    once (what one kill must take); otherwise how often it did."""
    child = supervised_child(aggregator_process(settings))
    restarts = child.restarts if child is not None else 0
    if restarts != 1 or child is None:
        return f"{restarts} restarts"
    return child.last_exit


def count_records(settings: Settings, topic: str) -> tuple[int, int]:
    """(offsets the topic has spanned, records still in it): compaction makes the second
    smaller, as it removes older records of a key and leaves their offsets unused."""

    consumer = Consumer(consumer_config(settings, "chaos-count"))
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        spanned = sum(watermarks(consumer, TopicPartition(topic, p), 10)[1] for p in partitions)
    finally:
        consumer.close()
    return spanned, len(read_to_end(settings, topic))
