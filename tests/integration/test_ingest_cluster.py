"""The ingest job, unchanged, submitted with spark-submit to a standalone Spark cluster.

pyspark's wheel carries ``spark-class`` and ``spark-submit`` (not ``start-master.sh``), enough to
start a real master and worker on loopback. The job runs in client mode: driver here, tasks in the
worker's executor, which needs no Python (the job has no Python UDF).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from kafka_reading import records_in

from services.ingest.trigger_mode import SIDE_SLOTS
from shared.jar_cache import spark_connector_jars
from shared.pids import wait_gone
from shared.settings import PROJECT_ROOT
from testkit.spark_cluster import StandaloneCluster
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka

pytestmark = pytest.mark.integration


def test_spark_submit_to_a_standalone_cluster_routes_every_record(
    mesh_settings, unique_name, create_topics, tmp_path
):
    prefix = unique_name("sub")
    raw = [f"{prefix}.raw.transactions", f"{prefix}.raw.logins"]
    outputs = [
        f"{prefix}.records.transactions",
        f"{prefix}.records.logins",
        f"{prefix}.records.invalid",
    ]
    create_topics(raw, partitions=4)
    create_topics([*outputs, f"{prefix}.metrics.windows"], partitions=2)
    stream = StreamConfig(start_time_ms=int(time.time() * 1000) - 10_000, count=2000, seed=4,
                          max_record_bytes=16 * 1024)  # fmt: skip
    report = produce_to_kafka(stream, SendOptions(topic_prefix=f"{prefix}.raw", progress=False),
                              mesh_settings)  # fmt: skip

    with StandaloneCluster(tmp_path / "spark") as cluster:
        _submit_and_wait(cluster, mesh_settings, prefix, outputs, report.delivered, tmp_path)
    assert records_in(mesh_settings.bootstrap_servers, outputs) >= report.delivered


def _submit_and_wait(cluster, mesh_settings, prefix, outputs, expected, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """spark-submit the job to ``cluster`` and wait until ``expected`` records are routed."""
    env = {
        **os.environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "MESH_BOOTSTRAP_SERVERS": mesh_settings.bootstrap_servers,
        "MESH_HOME": str(tmp_path / "home"),
        "MESH_INGEST_RAW_PATTERN": re.escape(prefix) + r"\.raw\..*",
        "MESH_INGEST_RECORDS_PREFIX": f"{prefix}.records",
        "MESH_INGEST_INVALID_TOPIC": f"{prefix}.records.invalid",
        "MESH_INGEST_WINDOWS_TOPIC": f"{prefix}.metrics.windows",
        "MESH_INGEST_MAX_RECORD_BYTES": str(16 * 1024),
    }
    log = (tmp_path / "submit.log").open("wb")
    submit = subprocess.Popen(
        cluster.submit_command(PROJECT_ROOT / "services" / "ingest" / "job.py",
                               spark_connector_jars(mesh_settings),
                               "spark.executor.memory=512m", "spark.cores.max=2"),
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while records_in(mesh_settings.bootstrap_servers, outputs) < expected:
            assert submit.poll() is None, (tmp_path / "submit.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the submitted job did not route the records"
            time.sleep(1)
        worker_log = "\n".join(
            p.read_text(errors="replace") for p in (tmp_path / "spark").rglob("stderr")
        )
        assert "Executor" in worker_log or "executor" in worker_log, "no executor ran on the worker"
        # 8 raw partitions need 8 + SIDE_SLOTS task slots for real-time mode; a 2-core cluster
        # has 2: the job falls back to micro-batch and says why, in one line.
        said = (tmp_path / "submit.log").read_text(errors="replace").splitlines()
        fallback = [line for line in said if line.startswith("ingest: routing runs")]
        assert fallback == [
            f"ingest: routing runs micro-batch: real-time mode needs {8 + SIDE_SLOTS} task slots "
            f"(one per raw partition + {SIDE_SLOTS} for the side queries), the master has 2: give "
            "it more cores or use the "
            "auto master (8 raw partitions, 2 task slots)"
        ], fallback
    finally:
        submit.send_signal(signal.SIGTERM)
        if not wait_gone(submit.pid, 60):
            submit.kill()
        log.close()
