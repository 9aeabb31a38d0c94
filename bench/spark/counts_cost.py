"""What ingest's window counts cost per batch, apart from classifying: ``python -m
bench.spark.counts_cost count [dedup]`` (environment: ``RATE`` records/s, default 1 000;
``BATCHES``, default 220; ``SHUFFLE`` partitions, default 2).

Each batch is ``RATE`` × 5 s of already classified rows (raw coordinates, placed time, status)
read from Parquet, event time advancing 5 s a batch, as ingest's 5 s counting trigger sees them.
``count`` is today's aggregation (1 s windows per status under a 390 s watermark); ``dedup``
first drops copies by raw coordinates within the watermark, the design issue 29 weighed for
counting routed records instead of classifying raw ones twice. One JSON line per run: batch
time over the last batches, state rows, and the JVM's CPU per record (docs/benchmarks.md,
"Counting windows without classifying twice")."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from services.ingest.config import IngestConfig
from shared.spark_session import ROCKSDB_PROVIDER

BATCH_S = 5
START_MS = 1_800_000_000_000
MODES = ("count", "dedup")


def write_batches(spark: SparkSession, folder: Path, rate: int, batches: int) -> Path:
    """One Parquet file per batch, named so the file source reads them in order."""
    rows = rate * BATCH_S
    frame = spark.range(0, rows * batches).select(
        (F.col("id") / rows).cast("long").alias("b"),
        F.concat_ws(
            ":",
            F.lit("raw.transactions"),
            (F.col("id") % 8).cast("string"),
            F.col("id").cast("string"),
        ).alias("coord"),
        F.timestamp_millis(F.lit(START_MS) + (F.col("id") * 1000 / rate).cast("long")).alias(
            "placed_at"
        ),
        F.when(F.col("id") % 100 == 0, "INVALID").otherwise("VALID").alias("status"),
    )
    frame.coalesce(1).write.partitionBy("b").parquet(str(folder / "by_batch"))
    files = folder / "files"
    files.mkdir()
    for batch in (folder / "by_batch").glob("b=*"):
        for index, part in enumerate(batch.glob("*.parquet")):
            shutil.copy(part, files / f"{int(batch.name[2:]):05d}_{index}.parquet")
    return files


def jvm_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(spark: SparkSession, files: Path, mode: str, work: Path, rows_a_batch: int) -> dict:
    source: DataFrame = (
        spark.readStream.schema(spark.read.parquet(str(files)).schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(files))
        .withWatermark("placed_at", IngestConfig().watermark_delay)
    )
    if mode == "dedup":
        source = source.dropDuplicatesWithinWatermark(["coord"])
    counts = source.groupBy(F.window("placed_at", "1 second"), "status").count()
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[attr-defined]
    cpu = jvm_cpu_s(pid)
    query = (
        counts.writeStream.format("noop").outputMode("update").trigger(availableNow=True)
        .option("checkpointLocation", str(work / f"checkpoint_{mode}")).start()
    )  # fmt: skip
    query.awaitTermination()
    cpu = jvm_cpu_s(pid) - cpu
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    last = [p["durationMs"]["triggerExecution"] for p in progress[-30:]]
    return {
        "mode": mode,
        "batches": len(progress),
        "batch_ms_last30": round(sum(last) / len(last)),
        "state_rows_end": sum(s["numRowsTotal"] for s in progress[-1]["stateOperators"]),
        "jvm_cpu_s_a_batch": round(cpu / len(progress), 2),
        "jvm_us_a_record": round(cpu / (len(progress) * rows_a_batch) * 1e6, 1),
    }


def main(argv: list[str]) -> int:
    modes = argv or ["count"]
    if any(mode not in MODES for mode in modes):
        print(f"usage: python -m bench.spark.counts_cost {{{'|'.join(MODES)}}} ...")
        return 2
    rate = int(os.environ.get("RATE", "1000"))
    batches = int(os.environ.get("BATCHES", "220"))
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.shuffle.partitions", os.environ.get("SHUFFLE", "2"))
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        .config("spark.sql.streaming.numRecentProgressUpdates", str(batches + 10))
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    with tempfile.TemporaryDirectory(prefix="counts-cost-") as scratch:
        work = Path(scratch)
        files = write_batches(spark, work, rate, batches)
        for mode in modes:
            print(json.dumps(run(spark, files, mode, work, rate * BATCH_S)), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
