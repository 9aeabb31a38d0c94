"""Backtests on a real broker, the real history job and Spark with Delta: generated records are
produced to the records topics (3 partitions, keyed as ingest keys them), the history stores
them, and each reference detector is backtested over the stored history. Its alerts must be the
ones the runtime's own Task code raises over the same partitions (the harness), id for id."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from services.backtest.errors import BacktestError
from services.backtest.workflow import run_backtest
from services.history.config import HistoryConfig
from services.history.query import start_history_query
from shared.avro import AvroSerializer
from shared.avro.catalogue import load_catalogue
from shared.avro.serde import AvroDeserializer
from shared.detector import Context, detector, harness
from shared.detector.loading import load_detector
from shared.history_tables import history_tables
from shared.kafka.partitioner import partition_for
from shared.settings import Settings
from shared.topic_names import TopicNames
from tools.loadgen.config import StreamConfig
from tools.loadgen.stream import generate

pytestmark = pytest.mark.integration

PARTITIONS = 3
RECORDS = 6_000
#: Yesterday, so the history's retention keeps every event date.
START_MS = int((dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).timestamp() * 1000)
DETECTORS = ["large_amount", "velocity", "new_country"]


@pytest.fixture(scope="module")
def stored(
    kafka_bootstrap: str, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The generated records, produced with explicit partitions and timestamps, then stored by
    one run of the history job; plus velocity's harness alerts, one left out and one made up,
    stored as a deployed 'velocity' would have raised them (for --compare)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    home = tmp_path_factory.mktemp("backtest")
    names = TopicNames(f"bt{dt.datetime.now(dt.UTC):%H%M%S%f}.")
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topics = [table.topic for table in history_tables(names)]
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics]).values():
        future.result(30)
    records = _generated()
    velocity = harness.run(load_detector("detectors/velocity")[0], records,
                           partitions=PARTITIONS).alerts  # fmt: skip
    deployed = [{**a, "source_topic": names.records("transactions")} for a in velocity[1:]]
    invented = {**deployed[0], "alert_id": "f" * 32, "source_record_id": "txn_invented",
                "customer_id": "cus_invented"}  # fmt: skip
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    encoders = {
        kind: AvroSerializer(schema).encode
        for kind, schema in {"transactions": "transaction", "logins": "login"}.items()
    }
    for n, (kind, record) in enumerate(records):
        key = record["customer_id"].encode()
        producer.produce(
            names.records(kind),
            encoders[kind](record),
            key,
            partition=partition_for(key, PARTITIONS),
            timestamp=START_MS + n,
        )
    encode_alert = AvroSerializer("alert").encode
    for alert in [*deployed, invented]:
        producer.produce(names.alerts, encode_alert(alert), alert["customer_id"].encode())
    assert producer.flush(60) == 0
    settings = replace(Settings.from_env(), bootstrap_servers=kafka_bootstrap, home=home,
                       topic_prefix=names.prefix)  # fmt: skip
    config = HistoryConfig.from_settings(
        settings, location=(home / "tables").as_uri(), checkpoint_dir=home / "cp", once=True
    )
    query = start_history_query(spark, config, settings, load_catalogue())
    query.awaitTermination(300)
    assert not query.isActive and query.exception() is None
    yield {"records": records, "location": config.location, "home": home,
           "velocity_stored": deployed, "invented": invented}  # fmt: skip
    admin.delete_topics(topics)


def _generated() -> list[tuple[str, dict[str, Any]]]:
    """The valid records of a seeded stream, decoded as the runtime decodes them."""
    schemas = {"transactions": "transaction", "logins": "login"}
    decoders = {kind: AvroDeserializer(schema) for kind, schema in schemas.items()}
    encoders = {kind: AvroSerializer(schema) for kind, schema in schemas.items()}
    out = []
    for generated in generate(StreamConfig(start_time_ms=START_MS, count=RECORDS, seed=31)):
        kind = generated.topic_suffix
        if kind in decoders and generated.meta.is_valid:
            raw = json.loads(generated.value)
            out.append((kind, decoders[kind].decode(encoders[kind].encode(raw))))
    return out


@pytest.mark.parametrize("name", DETECTORS)
def test_a_backtest_raises_the_alerts_the_runtime_raises_with_the_same_ids(
    name: str, stored: dict[str, Any], spark: Any, tmp_path: Path
) -> None:
    detector, _ = load_detector(f"detectors/{name}")
    out = tmp_path / "out"
    summary = run_backtest(spark, detector, stored["location"], None, None, out)
    expected = harness.run(detector, stored["records"], partitions=PARTITIONS).alerts
    assert expected, f"the feed raises no {name} alert: the comparison would prove nothing"
    got = spark.read.parquet((out / "alerts").as_uri()).collect()
    assert sorted(r["alert_id"] for r in got) == sorted(a["alert_id"] for a in expected)
    reads = sum(1 for kind, _ in stored["records"] if kind in detector.inputs)
    assert summary.records == reads and summary.failures == 0
    assert summary.alerts == len(expected) == sum(summary.by_rule.values())
    assert summary.table_versions and all(v >= 0 for v in summary.table_versions.values())
    assert not summary.fields_read.startswith("every field")  # only what detect reads was read


def _flagged(record: dict[str, Any]) -> bool:
    return record["amount"] > 5_000 and record["attributes"] is not None


@detector(name="large_by_helper", version="1", inputs=["transactions"])
def _by_helper(record: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """Hands the record to a helper: its source cannot say which fields it reads."""
    if not _flagged(record):
        return []
    evidence = {"attributes": ",".join(sorted(record["attributes"])), "ip": record["ip"]}
    return [ctx.alert("large", severity="LOW", score=1.0, reason="large", evidence=evidence)]


def test_a_detector_whose_source_does_not_say_what_it_reads_is_given_every_field(
    stored: dict[str, Any], spark: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    summary = run_backtest(spark, _by_helper, stored["location"], None, None, out)
    assert summary.fields_read.startswith("every field (line ")
    expected = harness.run(_by_helper, stored["records"], partitions=PARTITIONS).alerts
    assert expected and summary.failures == 0
    got = {r["alert_id"]: r["evidence"] for r in spark.read.parquet((out / "alerts").as_uri())
           .collect()}  # fmt: skip
    assert got == {a["alert_id"]: a["evidence"] for a in expected}


def test_compare_names_what_only_the_backtest_and_only_the_deployed_detector_raised(
    stored: dict[str, Any], spark: Any, tmp_path: Path
) -> None:
    detector, _ = load_detector("detectors/velocity")
    summary = run_backtest(spark, detector, stored["location"], None, None, tmp_path / "out",
                           compare_with="velocity")  # fmt: skip
    assert summary.compare is not None
    sides = summary.compare["per_rule"]["transactions_per_window"]
    assert sides == {"both": len(stored["velocity_stored"]), "only_new": 1, "only_old": 1}
    examples = summary.compare["examples"]["transactions_per_window"]
    assert [e["source_record_id"] for e in examples["only_old"]] == ["txn_invented"]


def test_a_range_without_records_is_one_error_and_nothing_is_written(
    stored: dict[str, Any], spark: Any, tmp_path: Path
) -> None:
    detector, _ = load_detector("detectors/velocity")
    out = tmp_path / "out"
    long_ago = dt.date(2001, 1, 1)
    with pytest.raises(BacktestError, match=r"holds no transactions records for 2001-01-01 "
                       r"\.\. 2001-01-31; it holds \d{4}-\d\d-\d\d \.\. "):  # fmt: skip
        run_backtest(spark, detector, stored["location"], long_ago, dt.date(2001, 1, 31), out)
    assert not out.exists()
    with pytest.raises(BacktestError, match="cannot read the history table"):
        run_backtest(spark, detector, (tmp_path / "nowhere").as_uri(), None, None, out)
    assert not out.exists()


@pytest.mark.timeout(600)  # a master, a worker, an executor and a driver: four JVMs
def test_mesh_backtest_runs_unchanged_on_a_standalone_spark_cluster(
    stored: dict[str, Any], spark: Any, tmp_path: Path
) -> None:
    """`python -m services.backtest --master spark://...` (what `mesh backtest --master` runs):
    the replay on a real master and worker, the same alert ids as the local run."""
    import subprocess
    import sys

    from testkit.spark_cluster import StandaloneCluster

    detector, _ = load_detector("detectors/velocity")
    expected = harness.run(detector, stored["records"], partitions=PARTITIONS).alerts
    out = tmp_path / "out"
    env = {**os.environ, "MESH_HOME": str(tmp_path / "home")}
    with StandaloneCluster(tmp_path / "spark", cores=2) as cluster:
        done = subprocess.run(
            [sys.executable, "-m", "services.backtest", "detectors/velocity", "--master",
             cluster.url, "--location", stored["location"], "--out", str(out)],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        executors = list((tmp_path / "spark" / "worker").glob("app-*/*/stderr"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert executors, "no executor ran on the cluster's worker"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["alerts"] == len(expected) and summary["records"] == sum(
        1 for kind, _ in stored["records"] if kind == "transactions")  # fmt: skip
    got = spark.read.parquet((out / "alerts").as_uri()).collect()
    assert sorted(r["alert_id"] for r in got) == sorted(a["alert_id"] for a in expected)
    assert "backtest velocity 1.0.0 over transactions" in done.stdout
