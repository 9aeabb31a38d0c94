"""The history writer against a real broker, real Spark and real Delta tables: every message of
the history topics stored once, across a batch run twice, a second run, and a lost checkpoint."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from services.history.config import HistoryConfig
from services.history.query import app_id, start_history_query
from services.history.writer import write_batch
from shared.avro import AvroSerializer
from shared.avro.catalogue import load_catalogue
from shared.history_tables import REJECTED, history_tables, table_path
from shared.settings import Settings
from shared.topic_names import TopicNames

pytestmark = pytest.mark.integration

DAY_MS = 86_400_000
#: Three days ago at midnight (UTC): recent enough for the history's retention to keep.
FIRST_DAY = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=3)
T0 = int(dt.datetime.combine(FIRST_DAY, dt.time(), dt.UTC).timestamp()) * 1000


def _transaction(i: int) -> dict[str, Any]:
    return {
        "record_id": f"txn_{i:06d}", "customer_id": f"cus_{i % 7}",
        "event_time": T0 + (i % 3) * DAY_MS, "amount": 10.0 + i, "currency": "EUR",
        "merchant_id": "m1", "country": "DE", "attributes": {},
    }  # fmt: skip


def _login(i: int) -> dict[str, Any]:
    return {
        "record_id": f"login_{i:06d}", "customer_id": f"cus_{i % 7}", "event_time": T0 + i,
        "country": "DE", "ip": "192.0.2.1", "device_id": "d1", "success": True,
    }  # fmt: skip


def _alert(i: int) -> dict[str, Any]:
    return {
        "alert_id": f"alert_{i:06d}", "detector": "large_amount", "detector_version": "1.0.0",
        "rule": "amount_over_threshold", "severity": "HIGH", "score": 1.5, "reason": "big",
        "customer_id": f"cus_{i % 7}", "source_record_id": f"txn_{i:06d}",
        "source_topic": "records.transactions", "source_partition": 0, "source_offset": i,
        "event_time": T0 + i, "detection_time": T0 + i + 5, "evidence": {"amount": "1"},
    }  # fmt: skip


def _produce(settings: Settings, messages: list[tuple[str, bytes]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": settings.bootstrap_servers})
    for n, (topic, value) in enumerate(messages):
        producer.produce(topic, value, f"k{n % 5}".encode())
    assert producer.flush(30) == 0


def _feed(names: TopicNames, first: int, count: int) -> list[tuple[str, bytes]]:
    """``count`` transactions from record ``first``, a login and an alert every fifth."""
    transaction, login = AvroSerializer("transaction").encode, AvroSerializer("login").encode
    alert = AvroSerializer("alert").encode
    messages = [(names.records("transactions"), transaction(_transaction(i)))
                for i in range(first, first + count)]  # fmt: skip
    messages += [(names.records("logins"), login(_login(i)))
                 for i in range(first, first + count, 5)]  # fmt: skip
    messages += [(names.alerts, alert(_alert(i))) for i in range(first, first + count, 5)]
    return messages


def _history_topics(
    label: str, create_topics: Callable[..., list[str]], partitions: int
) -> TopicNames:
    """The topic names under the prefix ``<label>.``, every history topic created."""
    names = TopicNames(label + ".")
    create_topics([table.topic for table in history_tables(names)], partitions)
    return names


def _stored(spark: Any, location: str, table: str) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of every row of ``table``."""
    frame = spark.read.format("delta").load(table_path(location, table))
    return [tuple(row) for row in frame.select("kafka_topic", "kafka_partition", "kafka_offset")
            .collect()]  # fmt: skip


def _run_once(spark: Any, config: HistoryConfig, settings: Settings) -> None:
    query = start_history_query(spark, config, settings, load_catalogue())
    query.awaitTermination(180)
    assert not query.isActive, "the history query did not finish what was there"
    assert query.exception() is None, query.exception()


def test_every_message_is_stored_once_across_reruns_and_a_lost_checkpoint(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    spark: Any,
    tmp_path: Path,
) -> None:
    names = _history_topics(unique_name("hist"), create_topics, 2)
    settings = replace(mesh_settings, topic_prefix=names.prefix)
    config = HistoryConfig.from_settings(
        settings, location=(tmp_path / "tables").as_uri(), checkpoint_dir=tmp_path / "cp",
        once=True,
    )  # fmt: skip
    garbage = [(names.records("transactions"), b"not avro at all"), (names.alerts, b"\xc3\x01x")]
    _produce(settings, _feed(names, 0, 100) + garbage)

    _run_once(spark, config, settings)
    transactions = _stored(spark, config.location, "transactions")
    assert len(transactions) == len(set(transactions)) == 100
    assert len(_stored(spark, config.location, "logins")) == 20
    assert len(_stored(spark, config.location, "alerts")) == 20
    rejected = spark.read.format("delta").load(table_path(config.location, REJECTED)).collect()
    assert sorted(bytes(r["value"]) for r in rejected) == sorted(v for _, v in garbage)
    assert all(r["error_class"] and r["error_message"] for r in rejected)
    days = spark.read.format("delta").load(table_path(config.location, "transactions"))
    assert {str(r["event_date"]) for r in days.select("event_date").distinct().collect()} == {
        str(FIRST_DAY + dt.timedelta(days=n)) for n in range(3)}  # fmt: skip

    # The same checkpoint goes on where it stopped.
    _produce(settings, _feed(names, 100, 50))
    _run_once(spark, config, settings)
    transactions = _stored(spark, config.location, "transactions")
    assert len(transactions) == len(set(transactions)) == 150

    # Without its checkpoint, a query starts after what the tables hold, not at the start.
    first_app = app_id(config.checkpoint_dir)
    shutil.rmtree(config.checkpoint_dir)
    _produce(settings, _feed(names, 150, 10))
    _run_once(spark, config, settings)
    assert app_id(config.checkpoint_dir) != first_app
    transactions = _stored(spark, config.location, "transactions")
    assert len(transactions) == len(set(transactions)) == 160
    assert len(_stored(spark, config.location, "alerts")) == 32
    assert len(_stored(spark, config.location, REJECTED)) == 2


def test_a_batch_written_again_adds_nothing(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    spark: Any,
    tmp_path: Path,
) -> None:
    """What Spark does after a kill between a batch's writes and its commit: the same batch id
    over the same offsets. The second write must be skipped by Delta, table by table."""
    names = _history_topics(unique_name("hrep"), create_topics, 1)
    _produce(mesh_settings, _feed(names, 0, 40))
    batch = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", mesh_settings.bootstrap_servers)
        .option("subscribe", ",".join(t.topic for t in history_tables(names)))
        .load()
    )
    location = (tmp_path / "tables").as_uri()
    tables = history_tables(names)
    arguments = {"location": location, "tables": tables, "catalogue": load_catalogue(),
                 "app_id": "test-app"}  # fmt: skip
    first = write_batch(batch, 7, **arguments)  # type: ignore[arg-type]
    assert first.rows["transactions"] == 40 and first.rows["alerts"] == 8
    write_batch(batch, 7, **arguments)  # type: ignore[arg-type]
    assert len(_stored(spark, location, "transactions")) == 40
    assert len(_stored(spark, location, "alerts")) == 8
    write_batch(batch, 8, **arguments)  # type: ignore[arg-type]  # a new batch id does write
    assert len(_stored(spark, location, "transactions")) == 80


def test_upkeep_keeps_whole_days_within_retention_and_compacts_each_day_to_one_file(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    spark: Any,
    tmp_path: Path,
) -> None:
    from services.history.upkeep import Upkeep

    names = TopicNames(unique_name("hkeep") + ".")
    topic = names.records("transactions")
    create_topics([topic], 1)
    today = dt.date(2026, 11, 27)
    midnight_ms = int(dt.datetime(2026, 11, 27, tzinfo=dt.UTC).timestamp() * 1000)
    encode = AvroSerializer("transaction").encode
    # 70 days of event dates (today and the 69 before), two records a day, one in each batch.
    records = [{**_transaction(i), "event_time": midnight_ms - (i % 70) * DAY_MS + 1000}
               for i in range(140)]  # fmt: skip
    _produce(mesh_settings, [(topic, encode(record)) for record in records])
    location = (tmp_path / "tables").as_uri()
    tables = [t for t in history_tables(names) if t.topic == topic]
    for batch_id, (start, end) in enumerate([(0, 70), (70, 140)]):
        batch = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", mesh_settings.bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", f'{{"{topic}": {{"0": {start}}}}}')
            .option("endingOffsets", f'{{"{topic}": {{"0": {end}}}}}')
            .load()
        )
        write_batch(batch, batch_id, location=location, tables=tables,
                    catalogue=load_catalogue(), app_id="keep")  # fmt: skip
    path = table_path(location, "transactions")
    assert set(_files_per_day(spark, path).values()) == {2}

    compacted = Upkeep(location, ["transactions", REJECTED], 60, 3600).run(spark, today=today)

    kept = spark.read.format("delta").load(path)
    days = sorted(str(r[0]) for r in kept.select("event_date").distinct().collect())
    assert days[0] == str(today - dt.timedelta(days=60)) and days[-1] == str(today)
    assert len(days) == 61 and kept.count() == 2 * 61
    assert set(_files_per_day(spark, path).values()) == {1}
    assert compacted["transactions"] > 0


def _files_per_day(spark: Any, path: str) -> dict[str, int]:
    """Event date -> data files of the table's current version."""
    from pyspark.sql import functions as F

    frame = spark.read.format("delta").load(path).withColumn("file", F.input_file_name())
    rows = frame.groupBy("event_date").agg(F.countDistinct("file")).collect()
    return {str(day): int(files) for day, files in rows}


def test_a_kill_9_mid_batch_then_a_restart_leaves_every_record_stored_once(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    spark: Any,
    tmp_path: Path,
) -> None:
    """The history as a process, records flowing; SIGKILL once a batch has written its
    transactions but not yet been committed by Spark (checked, not assumed), then a restart."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    names = _history_topics(unique_name("hkill"), create_topics, 2)
    location = (tmp_path / "tables").as_uri()
    checkpoint = tmp_path / "cp"
    env = {**os.environ, "MESH_HOME": str(tmp_path / "home"), "PYSPARK_PYTHON": sys.executable,
           "MESH_BOOTSTRAP_SERVERS": mesh_settings.bootstrap_servers}  # fmt: skip
    command = [sys.executable, "-m", "services.history", "--topic-prefix", names.prefix,
               "--location", location, "--checkpoint-dir", str(checkpoint),
               "--trigger", "1"]  # fmt: skip
    sent = 0
    flowing = threading.Event()
    flowing.set()

    def feed() -> None:
        nonlocal sent
        while flowing.is_set() and sent < 4000:
            _produce(mesh_settings, _feed(names, sent, 50))
            sent += 50
            time.sleep(0.2)

    producer = threading.Thread(target=feed)
    log = (tmp_path / "history.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    producer.start()
    try:
        in_batch = _wait_for_a_batch_half_written(checkpoint, location, timeout_s=240)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        flowing.clear()
        producer.join(60)
        if process.poll() is None:
            process.kill()
            process.wait(30)
        log.close()
    assert not (checkpoint / "commits" / str(in_batch)).exists(), "the kill came mid-batch"

    restarted = subprocess.run([*command, "--once"], env=env, capture_output=True, text=True,
                               timeout=300, check=False)  # fmt: skip
    assert restarted.returncode == 0, restarted.stderr[-2000:]
    transactions = _stored(spark, location, "transactions")
    assert len(transactions) == len(set(transactions)) == sent
    alerts = _stored(spark, location, "alerts")
    assert len(alerts) == len(set(alerts)) == sent // 5


def _wait_for_a_batch_half_written(checkpoint: Path, location: str, timeout_s: float) -> int:
    """The id of a batch whose offsets Spark logged and whose transactions Delta committed,
    while Spark has not committed the batch: the moment a kill leaves a batch half done."""
    import time

    deltas = Path(location.removeprefix("file://")) / "transactions" / "_delta_log"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        logged = [int(p.name) for p in (checkpoint / "offsets").glob("[0-9]*")]
        for batch in sorted(logged, reverse=True)[:1]:
            if (checkpoint / "commits" / str(batch)).exists():
                continue
            for entry in deltas.glob("*.json"):
                if f'"version":{batch},' in entry.read_text() and batch > 0:
                    return batch
        time.sleep(0.02)
    raise AssertionError("no batch was seen half written")


def test_the_delta_log_read_without_spark_agrees_with_spark_past_a_checkpoint(
    spark: Any, tmp_path: Path
) -> None:
    """shared.delta_log replays a checkpoint (here one every 3 commits; 10 by default) and the
    commits after it: its live files, rows and partitions must be Spark's."""
    from shared.delta_log import live_files, local_table

    path = (tmp_path / "t").as_uri()
    every_3 = "TBLPROPERTIES ('delta.checkpointInterval' = '3')"
    spark.sql(f"CREATE TABLE delta.`{path}` (n LONG, event_date STRING) USING delta "
              f"PARTITIONED BY (event_date) {every_3}")  # fmt: skip
    for n in range(5):
        rows = [(n, f"2026-11-{1 + n % 3:02d}")] * (n + 1)
        frame = spark.createDataFrame(rows, "n long, event_date string")
        frame.write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE event_date = '2026-11-01'")
    assert (tmp_path / "t" / "_delta_log" / "_last_checkpoint").exists()

    files = live_files(local_table(path))
    table = spark.read.format("delta").load(path)
    assert sum(f.records for f in files) == table.count()
    assert {Path(f.path).name for f in files} == {Path(p).name for p in table.inputFiles()}
    assert {f.partition["event_date"] for f in files} == {"2026-11-02", "2026-11-03"}


def test_mesh_history_lists_rows_days_and_lag(
    mesh_settings: Settings,
    unique_name: Callable[[str], str],
    create_topics: Callable[..., list[str]],
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from control.cli import history

    names = _history_topics(unique_name("hls"), create_topics, 1)
    settings = replace(mesh_settings, topic_prefix=names.prefix, home=tmp_path / "home")
    config = HistoryConfig.from_settings(settings, once=True)
    _produce(settings, _feed(names, 0, 30))
    _run_once(spark, config, settings)
    _produce(settings, _feed(names, 30, 10))  # not stored yet: the job is 10 + 2 + 2 behind

    assert history.run(argparse.Namespace(wait=None), settings) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.strip().startswith("transactions"))
    assert line.split()[1] == "30" and line.split()[4] == "3"  # rows, days
    assert str(FIRST_DAY) in line and str(FIRST_DAY + dt.timedelta(days=2)) in line
    assert "lag      14 records behind" in out

    # --wait: refused while the job is behind, then passes once it has stored the rest.
    assert history.run(argparse.Namespace(wait=1.0), settings) == 1
    assert "did not catch up within 1 s (14 records behind" in capsys.readouterr().out
    _run_once(spark, config, settings)
    assert history.run(argparse.Namespace(wait=1.0), settings) == 0
    assert "lag      0 records behind" in capsys.readouterr().out
