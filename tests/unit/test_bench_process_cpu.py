"""The whole-mesh CPU table (bench.process_cpu): which part a command line is charged to, and
what the table says per part."""

from __future__ import annotations

import os

from bench.process_cpu import BENCH, Snapshot, cpu_table, part_of, snapshot


def test_each_part_of_the_mesh_is_named_by_its_command_line() -> None:
    python = "/work/.venv/bin/python"
    assert part_of([python, "-m", "services.ingest.job"]) == "ingest (Spark)"
    assert part_of([python, "-m", "services.metrics_aggregator"]) == "metrics aggregator (Spark)"
    assert part_of([python, "-m", "services.history"]) == "history (Spark)"
    runtime = [python, "-m", "services.detector_runtime", "/h/releases/1-1.0.0",
               "--instance-id", "detector-velocity-r1-0"]  # fmt: skip
    assert part_of(runtime) == "detector detector-velocity-r1-0"
    assert part_of(["/usr/bin/java", "-cp", "x", "kafka.Kafka", "server.properties"]) == "broker"
    assert part_of(["/usr/bin/influxd", "-config", "c"]) == "influxdb"
    assert part_of(["/cache/jaeger/jaeger-v1.76.0", "--config", "c"]) == "trace backend (jaeger)"
    assert part_of(["/usr/bin/java", "-cp", "pyspark", "SparkSubmit", "pyspark-shell"]) is None


def test_a_supervisor_is_charged_as_itself_not_as_the_child_it_names() -> None:
    supervisor = ["python", "-m", "control.supervisor", "--state", "s.json", "--",
                  "python", "-m", "services.ingest.job"]  # fmt: skip
    assert part_of(supervisor) == "supervisors"


def test_the_bench_process_itself_and_its_children_are_the_load_generators() -> None:
    mine = snapshot()
    assert mine.cpu_s[os.getpid()][0] == BENCH


def test_cpu_used_between_snapshots_is_summed_per_part_and_a_new_process_counts_from_zero() -> None:
    before = Snapshot(0.0, {1: ("broker", 10.0), 2: ("ingest (Spark)", 5.0)})
    after = Snapshot(10.0, {1: ("broker", 12.0), 2: ("ingest (Spark)", 6.0),
                            3: ("ingest (Spark)", 0.5)})  # fmt: skip
    assert after.since(before) == {"broker": 2.0, "ingest (Spark)": 1.5}


def test_the_table_gives_idle_and_busy_ms_per_second_and_microseconds_per_record() -> None:
    text = cpu_table({"broker": 1.0}, 10.0, {"broker": 3.0, "ingest (Spark)": 1.0}, 20.0, 100_000)
    rows = {line.split("  ")[1].strip(): line.split()[-4:] for line in text.splitlines()[2:]}
    assert rows["broker"] == ["100", "150", "30.0", "75%"]
    assert rows["ingest (Spark)"] == ["0", "50", "10.0", "25%"]
    assert text.splitlines()[-1].split()[-4:] == ["100", "200", "40.0", "100%"]
