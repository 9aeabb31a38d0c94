"""Seed 004's experiment, scaled to this machine: the aggregate counts every record, and shows
the ones processed twice.

300 000 transactions wait on an 8-partition topic. Instance 1 of a detector starts; instances 2
and 3 join when instance 1 has done about a fifth; once both have done some, instance 2 leaves
(SIGTERM), and once instance 3 has done more after that, it dies (SIGKILL), with records still
waiting.
Each instance reports its metrics every second to the mesh's `metrics` topic, and the Spark
aggregator turns them into totals in a real InfluxDB. Once the input is drained:

- the total `records.in` count in InfluxDB equals the sum of the instances' last snapshots
  (the aggregation is exact, table semantics);
- it is at least the number of records (nothing lost, also after a SIGKILL: counts travel with
  the commits that cover them);
- the surplus (records processed twice after a rebalance or the kill) is printed and bounded;
- each instance's own series in InfluxDB matches that instance's last snapshot.

Both endings run in one experiment, one after the other, on one feed and one aggregator: each
is still a membership change mid-run, and `make test` starts the aggregator's Spark query and
produces the records once instead of twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from detector_folders import write_detector
from polling import wait_for

from shared.avro import AvroDeserializer
from shared.kafka.inspect import group_lag
from testkit.detector_runs import DetectorProcess, produce_feed, read_to_end
from testkit.influx_query import query, records_in_per_instance
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

RECORDS = 300_000
PARTITIONS = 8
BATCH = 2000
#: Each membership change (two joins, a leave, a kill) can make each of the (at most three)
#: instances then in the group process at most one batch whose offsets were not committed yet
#: a second time.
SURPLUS_BOUND = 4 * 3 * BATCH

#: ~60 µs per record: one instance takes ~20 s for the lot, so the others have time to join.
SLOW_BODY = """
    time.sleep(0.00005)
    return []
"""


def test_aggregate_counts_every_record_and_shows_the_ones_processed_twice(
    private_mesh: Any,
    influxdb: Any,
    spark: Any,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    from services.metrics_aggregator.run import AggregatorRun

    settings = private_mesh.settings
    name = unique_name("seed").replace("-", "_")
    folder = write_detector(tmp_path / name, name, body=SLOW_BODY, preamble="import time\n")
    database = unique_name("seed").replace("-", "_")
    source = private_mesh.topic("records.transactions")
    produced = produce_feed(
        settings,
        {"transactions": source},
        valid_records(
            StreamConfig(
                start_time_ms=int(time.time() * 1000),
                count=RECORDS,
                types=("transactions",),
                invalid_share=0.0,
            )
        ),
    )
    total = produced["transactions"]
    assert total >= RECORDS

    aggregator = AggregatorRun.start(
        spark, settings, tmp_path / "aggregator", influx_url=influxdb.url, influx_db=database
    )
    instances: list[DetectorProcess] = []
    try:

        def instance(number: int) -> tuple[DetectorProcess, Path]:
            status = tmp_path / f"instance-{number}.json"
            process = DetectorProcess(
                settings,
                folder,
                [
                    "--topic-prefix",
                    private_mesh.prefix,
                    "--instance-id",
                    f"{name}-{number}",
                    "--status-file",
                    str(status),
                    "--batch-size",
                    str(BATCH),
                ],
                tmp_path / f"instance-{number}.log",
                env={"MESH_METRICS_INTERVAL_S": "1"},
            )
            instances.append(process)
            return process, status

        first, first_status = instance(1)
        first.wait_for_status(first_status, lambda s: s["records"] >= total // 5, timeout_s=120)
        (second, second_status), (third, third_status) = instance(2), instance(3)
        second.wait_for_status(second_status, lambda s: s["records"] >= total // 30, timeout_s=120)
        third.wait_for_status(third_status, lambda s: s["records"] >= total // 30, timeout_s=120)
        left_at = sum(_records(path) for path in (first_status, second_status, third_status))
        assert second.terminate() == 0
        more = _records(third_status) + total // 30
        third.wait_for_status(third_status, lambda s: s["records"] >= more, timeout_s=120)
        killed_at = sum(_records(path) for path in (first_status, second_status, third_status))
        third.kill()
        # Both faults happened mid-run: records were still waiting when each instance went.
        assert left_at < total, f"instance 2 left after the input was drained ({left_at})"
        assert killed_at < total, f"instance 3 died after the input was drained ({killed_at})"

        group = f"{private_mesh.prefix}detector.{name}"
        wait_for(
            lambda: group_lag(settings.bootstrap_servers, group, [source]).total == 0,
            timeout=180,
            what="instance 1 to drain the input",
            interval=1.0,
        )
        assert first.terminate() == 0  # its last snapshot goes out at shutdown

        last = _last_snapshots(settings, private_mesh.topic("metrics"), f"detector.{name}")
        assert len(last) == 3, f"expected snapshots of three instances, got {sorted(last)}"
        expected = sum(last.values())

        service = f"detector.{name}"
        wait_for(
            lambda: _influx_total(influxdb.url, database, service) == expected,
            timeout=120,
            what=f"InfluxDB's records.in total to reach the instances' sum {expected}",
            interval=1.0,
        )
        per_instance = records_in_per_instance(influxdb.url, database, service)
        assert per_instance == last

        surplus = expected - total
        counts = ", ".join(f"{i.split('@')[0]} {n}" for i, n in sorted(last.items()))
        print(f"\n{total} records, aggregate {expected} ({counts}), twice: {surplus}")
        assert expected >= total, f"records lost from the count: {total - expected}"
        assert surplus <= SURPLUS_BOUND
    finally:
        for process in instances:
            process.__exit__()
        aggregator.stop()


def _records(status_path: Path) -> int:
    from shared.json_files import read_json

    status = read_json(status_path) or {}
    return int(status.get("records", 0))


def _last_snapshots(settings: Any, topic: str, service: str) -> dict[str, int]:
    """The largest `records.in` count each instance of ``service`` published (counts are
    monotonic within an instance, so the largest is the last)."""
    decode = AvroDeserializer("metric_snapshot").decode
    last: dict[str, int] = {}
    for message in read_to_end(settings, topic):  # every instance has stopped
        snapshot = decode(message.value())
        if snapshot["service"] == service and snapshot["name"] == "records.in":
            instance = snapshot["instance_id"]
            last[instance] = max(last.get(instance, 0), snapshot["count"])
    return last


def _influx_total(url: str, database: str, service: str) -> int | None:
    rows = query(
        url,
        database,
        f"SELECT last(\"count\") FROM \"records.in\" WHERE scope='all' AND service='{service}'",
    )
    return int(rows[0]["last"]) if rows else None
