"""The detectors benchmark: each reference detector on one runtime instance, next to the raw pipe
and to the same logic as a plain faust-streaming agent (and, for velocity, a faust windowed
table), all on the same input topics filled once per run.

Every figure drains a backlog: records/s from the first batch to the last record. The runtime
runs in-process (the code path of ``python -m services.detector_runtime`` minus the process
start); faust runs in a subprocess of its own (``python -m bench.scenarios.detectors faust ...``)
because its worker owns the event loop and the signal handlers.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import faust

from bench.drain import drain
from bench.kafka_fixture import create_topic
from bench.result import Result
from bench.scenarios.raw_pipe import copy_batches
from detectors.large_amount.detector import THRESHOLDS
from shared.avro import AvroDeserializer
from shared.detector import load_detector
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames
from testkit.detector_runs import produce_feed
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

COUNT = 200_000
#: faust is 10-500 x slower: it gets a slice of the same topic so the run stays short.
FAUST_COUNT = {"agent": 30_000, "tumbling": 10_000, "table": 5_000}
PARTITIONS = 8


@dataclass(frozen=True)
class Feed:
    """The run's input topics (record type -> topic) and their record counts."""

    topics: dict[str, str]
    counts: dict[str, int]


_FEEDS: dict[str, Feed] = {}


def feed(settings: Settings, count: int = COUNT) -> Feed:
    """Generator records as Avro in 8-partition topics; made once per cluster per run."""
    cached = _FEEDS.get(settings.bootstrap_servers)
    if cached is not None:
        return cached
    names = TopicNames(f"bench.det.{uuid.uuid4().hex[:8]}.")
    topics = {
        t: create_topic(settings, "", PARTITIONS, name=names.records(t))
        for t in ("transactions", "logins")
    }
    config = StreamConfig(start_time_ms=1_790_000_000_000, count=count, seed=7)
    # Uncompressed: faust's client (aiokafka) cannot read lz4 without an extra library.
    counts = produce_feed(settings, topics, valid_records(config), **{"compression.type": "none"})
    _FEEDS[settings.bootstrap_servers] = made = Feed(topics, counts)
    return made


def run_detector(settings: Settings, name: str) -> Result:
    """Records/s of ``detectors/<name>`` on one runtime instance draining the feed."""

    data = feed(settings)
    detector, _ = load_detector(f"detectors.{name}")
    prefix = f"bench.det.{uuid.uuid4().hex[:8]}."
    names = TopicNames(prefix)
    for topic in (names.alerts, names.detectors_dlq):
        create_topic(settings, "", PARTITIONS, name=topic)
    inputs = {t: data.topics[t] for t in detector.inputs}
    figures = drain(settings, name, inputs, prefix, sum(data.counts[t] for t in inputs))
    state = "stateful" if figures["stateful"] else "stateless"
    return Result(
        f"detector_{name}",
        figures["records"],
        figures["seconds"],
        notes=f"runtime, 1 instance, {state}, {figures['alerts']} alerts",
        extra={"alerts": figures["alerts"], "changelog": figures["changelog"]},
    )


def run_large_amount(settings: Settings) -> Result:
    return run_detector(settings, "large_amount")


def run_velocity(settings: Settings) -> Result:
    return run_detector(settings, "velocity")


def run_new_country(settings: Settings) -> Result:
    return run_detector(settings, "new_country")


def run_pipe_same_topic(settings: Settings) -> Result:
    """The raw pipe over the feed's transactions topic, for a same-data ratio."""
    data = feed(settings)
    sink = create_topic(settings, "det-pipe-out", PARTITIONS)
    count = data.counts["transactions"]
    copied, seconds = copy_batches(
        settings, data.topics["transactions"], sink, count, time.monotonic() + 300
    )
    return Result("raw_pipe_avro_feed", copied, seconds, notes="raw pipe on the detectors' feed")


def _run_faust(settings: Settings, kind: str) -> Result:
    data = feed(settings)
    topic = data.topics["transactions"]
    sink = create_topic(settings, f"faust-{kind}-alerts", PARTITIONS)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.scenarios.detectors",
            "faust",
            kind,
            settings.bootstrap_servers,
            topic,
            sink,
            str(FAUST_COUNT[kind]),
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # faust redirects stdout into its logging: find the figures wherever they went.
    found = re.findall(r'\{"records".*?\}', out.stdout + out.stderr)
    if not found:
        raise RuntimeError(f"faust {kind} produced no result:\n{out.stderr[-3000:]}")
    figures = json.loads(found[-1])
    label = {
        "agent": "plain agent, large_amount",
        "table": "hopping table 60 s/5 s, velocity",
        "tumbling": "tumbling table 60 s, velocity",
    }[kind]
    return Result(
        f"faust_{kind}",
        figures["records"],
        figures["seconds"],
        notes=f"faust-streaming {label}, {figures['alerts']} alerts",
    )


def run_faust_agent(settings: Settings) -> Result:
    return _run_faust(settings, "agent")


def run_faust_table(settings: Settings) -> Result:
    return _run_faust(settings, "table")


def run_faust_tumbling(settings: Settings) -> Result:
    return _run_faust(settings, "tumbling")


#: What to register in bench/scenarios/__init__.py (name -> runner), in run order.
SCENARIOS = {
    "detectors_pipe": run_pipe_same_topic,
    "detector_large_amount": run_large_amount,
    "detector_velocity": run_velocity,
    "detector_new_country": run_new_country,
    "faust_agent": run_faust_agent,
    "faust_table": run_faust_table,
    "faust_tumbling": run_faust_tumbling,
}


# --- the faust baseline, run in its own process ----------------------------------------------
def _faust_main(kind: str, bootstrap: str, topic: str, sink: str, count: int) -> None:
    """A faust worker that processes ``count`` records of ``topic`` and prints its rate."""

    logging.basicConfig(level=logging.WARNING)
    decode = AvroDeserializer("transaction").decode
    app_id = f"bench-faust-{kind}-{uuid.uuid4().hex[:8]}"
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        store="memory://",
        web_enabled=False,
        topic_partitions=PARTITIONS,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
    )
    source = app.topic(topic, key_type=bytes, value_type=bytes, value_serializer="raw")
    alerts = app.topic(sink, partitions=PARTITIONS, value_serializer="raw")
    progress: dict[str, Any] = {"n": 0, "alerts": 0, "start": None}

    def done() -> None:
        seconds = time.perf_counter() - progress["start"]
        figures = {"records": progress["n"], "seconds": seconds, "alerts": progress["alerts"]}
        print(json.dumps(figures), flush=True)
        os._exit(0)

    def tick() -> None:
        if progress["start"] is None:
            progress["start"] = time.perf_counter()
        progress["n"] += 1

    if kind == "agent":

        @app.agent(source)
        async def large_amount(stream: Any) -> None:
            async for value in stream:
                tick()
                record = decode(value)
                threshold = THRESHOLDS.get(record["currency"])
                if threshold is not None and record["amount"] > threshold:
                    progress["alerts"] += 1
                    await alerts.send(key=record["customer_id"].encode(), value=value)
                if progress["n"] >= count:
                    done()

    else:
        table = app.Table("velocity", default=int, partitions=PARTITIONS)
        if kind == "table":  # the runtime's velocity windows: 60 s, every 5 s
            table = table.hopping(60, 5, expires=timedelta(minutes=2))
        else:  # the cheapest windowed table faust has
            table = table.tumbling(60, expires=timedelta(minutes=2))

        @app.agent(source)
        async def velocity(stream: Any) -> None:
            async for _key, value in stream.items():
                tick()
                record = decode(value)
                customer = record["customer_id"]
                table[customer] += 1
                if table[customer].current() >= 5:
                    progress["alerts"] += 1
                    await alerts.send(key=customer.encode(), value=value)
                if progress["n"] >= count:
                    done()

    worker = faust.Worker(app, loglevel="WARNING", quiet=True)
    worker.execute_from_commandline()


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "faust":
        _faust_main(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        print("usage: python -m bench.scenarios.detectors faust agent|table BOOTSTRAP IN OUT N")
        raise SystemExit(2)
