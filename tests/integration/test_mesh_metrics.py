"""The whole mesh, as `mesh up` runs it, reports into a real InfluxDB: per detector and per
instance, the series match what the instances themselves counted, and ingest's counts match what
the load generator sent (plus the probe records `mesh up` sends to know the mesh can alert). This
is the metrics issue's "done when", as a user would check it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mesh_cli import mesh
from polling import wait_for

from shared.influx.writer import InfluxWriter
from shared.json_files import read_json
from shared.kafka.inspect import topic_views
from testkit.influx_query import query

pytestmark = pytest.mark.integration

RECORDS = 3000


def test_mesh_up_reports_every_detector_and_instance_into_influxdb_matching_their_counters(
    private_mesh: Any, influxdb: Any, unique_name: Callable[[str], str]
) -> None:
    database = unique_name("mesh").replace("-", "_")
    env = {
        **private_mesh.env,
        "MESH_INFLUX_URL": influxdb.url,
        "MESH_INFLUX_DB": database,
        "MESH_METRICS_INTERVAL_S": "2",
    }
    home = private_mesh.settings.home
    InfluxWriter(influxdb.url, database).ensure_database()  # to query it before the first point
    try:
        up = mesh("up", env=env, timeout=420)
        assert up.returncode == 0, up.stdout + up.stderr
        assert "started metrics aggregator" in up.stdout and "started ingest" in up.stdout
        valid_topics = [private_mesh.topic(f"records.{t}") for t in ("transactions", "logins")]
        views = topic_views(private_mesh.settings.bootstrap_servers, valid_topics)
        probes = sum(v.written for v in views)  # routed while `mesh up` waited for readiness
        assert probes > 0, "mesh up returned before a probe went through ingest"
        produced = mesh(
            "produce", "--count", str(RECORDS), "--rate", "1000", "--event-rate", "1000",
            "--customers", "50000", "--topic-prefix", private_mesh.topic("raw"), "--no-progress",
            env=env,
        )  # fmt: skip
        assert produced.returncode == 0, produced.stdout + produced.stderr
        valid = int(re.search(r"valid (\d+)", produced.stdout).group(1))  # type: ignore[union-attr]

        def detectors_match() -> bool:
            replicas = _replica_records(home)
            totals = _totals(influxdb.url, database, "records.in")
            return (
                sum(n for per in replicas.values() for n in per.values()) >= valid
                and bool(replicas)
                and all(totals.get(f"detector.{d}") == sum(r.values()) for d, r in replicas.items())
            )

        wait_for(
            detectors_match,
            timeout=240,
            what="InfluxDB's records.in totals to equal each detector's own counters",
            interval=2.0,
        )
        replicas = _replica_records(home)
        assert set(replicas) == {"large_amount", "new_country", "velocity"}
        assert len(replicas["velocity"]) == 2  # its manifest asks for two replicas
        for detector, own in replicas.items():
            per_instance = _per_instance(influxdb.url, database, f"detector.{detector}")
            assert per_instance == own, detector

        wait_for(
            lambda: (
                _totals(influxdb.url, database, "ingest.records.valid").get("ingest")
                == valid + probes
            ),
            timeout=60,
            what=f"InfluxDB's ingest.records.valid to reach the {valid} valid records produced "
            f"and the {probes} probe records",
        )

        # The notifier reports like every instance: InfluxDB's count of the alerts it took
        # equals its own, once it has taken some.
        def notifier_matches() -> bool:
            own = read_json(home / "notifier" / "status.json") or {}
            taken = int(own.get("alerts", 0))
            return taken > 0 and _totals(influxdb.url, database, "notifier.alerts").get(
                "notifier") == taken  # fmt: skip

        what = "InfluxDB's notifier.alerts total to equal the notifier's own count"
        wait_for(notifier_matches, timeout=120, interval=2.0, what=what)
        status = mesh("status", env=env)
        assert status.returncode == 0, status.stdout + status.stderr
        assert re.search(r"metrics\s+UP .* influx ok", status.stdout), status.stdout
    finally:
        down = mesh("down", env=env, timeout=300)
        assert down.returncode == 0, down.stdout + down.stderr


def _replica_records(home: Path) -> dict[str, dict[str, int]]:
    """detector -> replica name -> records, from the replicas' own status files."""
    out: dict[str, dict[str, int]] = {}
    for path in home.glob("detector-*-r*-*/instance.json"):
        status = read_json(path) or {}
        replica = path.parent.name
        detector = re.fullmatch(r"detector-(.+)-r\d+-\d+", replica).group(1)  # type: ignore[union-attr]
        out.setdefault(detector, {})[replica] = int(status.get("records", 0))
    return out


def _totals(url: str, database: str, measurement: str) -> dict[str, int]:
    rows = query(
        url,
        database,
        f'SELECT last("count") FROM "{measurement}" WHERE scope=\'all\' GROUP BY service',
    )
    return {row["service"]: int(row["last"]) for row in rows}


def _per_instance(url: str, database: str, service: str) -> dict[str, int]:
    """replica name -> last count of its instance (instance ids are ``<replica>@host:pid:ms``)."""
    rows = query(
        url,
        database,
        f'SELECT last("count") FROM "records.in" '
        f"WHERE scope='instance' AND service='{service}' GROUP BY instance",
    )
    return {row["instance"].split("@")[0]: int(row["last"]) for row in rows}
