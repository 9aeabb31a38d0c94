"""How fast routing's plan gets when one JVM plans and runs it again and again: is warming it
in-JVM before `mesh up` says ready worth it? (issue 49, "ready means warm").

A real-time hand-over re-optimises, re-plans and generates the code of routing's plan from its
analysed plan every checkpoint interval, and in the first minutes that code runs cold. Here a
static frame shaped like the Kafka source (generated raw records, their headers empty) goes
through the same classification and routing as ingest's query, to Spark's noop sink, ROUNDS
times from the same analysed plan (each write is a fresh optimisation, planning, code
generation and run), on ``local[2]``; each round's seconds are printed.

    MESH_BOOTSTRAP_SERVERS=127.0.0.1:1 python -m bench.routing_plan_warmup [ROUNDS] [RECORDS]

(No broker is used: the address only satisfies the ingest inputs' settings.)
"""

from __future__ import annotations

import datetime as dt
import sys
import time

from pyspark.sql import functions as F

from services.ingest.config import IngestConfig
from services.ingest.inputs import IngestInputs
from services.ingest.metrics import observe_outcomes
from services.ingest.routing import route
from services.ingest.validation import ERROR
from services.ingest.warmup import KAFKA_SOURCE
from shared.settings import Settings
from shared.spark_session import spark_session
from tools.loadgen import StreamConfig
from tools.loadgen.stream import generate


def main(rounds: int, records: int) -> None:
    settings = Settings.from_env()
    config = IngestConfig.from_settings(settings)
    started = time.monotonic()
    spark = spark_session("routing-plan-warmup", settings, "local[2]", 1)
    print(f"session {time.monotonic() - started:.1f} s", flush=True)
    inputs = IngestInputs.load(settings)
    now = dt.datetime.now()
    stream = StreamConfig(start_time_ms=int(time.time() * 1000), count=records, seed=3,
                          invalid_share=0.01)  # fmt: skip
    rows = [(r.key, r.value, f"raw.{r.topic_suffix}", i % 8, i, now, 0, [])
            for i, r in enumerate(generate(stream))]  # fmt: skip
    raw = spark.createDataFrame(rows, KAFKA_SOURCE).cache()
    raw.count()
    routed = route(observe_outcomes(inputs.classified(raw, config), F.col(ERROR)), inputs.types,
                   inputs.catalogue, config.records_prefix, config.invalid_topic, "warm-up",
                   config.trace_sample_ratio)  # fmt: skip
    for n in range(rounds):
        began = time.monotonic()
        routed.write.format("noop").mode("overwrite").save()
        print(f"round {n}: {time.monotonic() - began:.2f} s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 30,
        int(sys.argv[2]) if len(sys.argv) > 2 else 2000,
    )
