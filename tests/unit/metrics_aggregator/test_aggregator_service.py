"""The driver-side sinks without Spark: InfluxDB away never raises, files are always written."""

from __future__ import annotations

from dataclasses import replace

from services.metrics_aggregator.config import AggregatorConfig, metrics_dir, status_path
from services.metrics_aggregator.points import window_point
from services.metrics_aggregator.service import AggregatorService
from shared.json_files import read_json
from shared.settings import Settings


def service_for(tmp_path, influx_url: str = "", find=lambda settings: None) -> AggregatorService:
    settings = replace(Settings(), home=tmp_path, influx_url=influx_url)
    config = AggregatorConfig.from_settings(settings)
    return AggregatorService(settings, config, "agg@test", "127.0.0.1:1", find_local_influx=find)


def test_influxdb_down_buffers_points_and_the_files_get_them_anyway(tmp_path):
    service = service_for(tmp_path, influx_url="http://127.0.0.1:1")  # nothing listens there
    points = [window_point("raw.x", 1_000 * i, "VALID", i) for i in range(3)]
    service.write_points(points)  # must not raise
    service.write_points(points[:1])
    writer = service.influx_writer()
    assert writer is not None and writer is service.influx_writer()  # one for the driver
    stats = writer.stats()
    assert (stats.buffered, stats.healthy) == (4, False) and stats.failures >= 1
    assert not service.flush(0.1)
    [file] = metrics_dir(service.settings).glob("*.lp")
    assert len(file.read_text().splitlines()) == 4
    service.write_status()
    status = read_json(status_path(service.settings))
    assert status is not None
    assert status["influx"]["buffered"] == 4 and status["influx"]["healthy"] is False
    assert status["influx"]["url"] == "http://127.0.0.1:1"
    assert status["files"]["written"] == 4


def test_without_a_url_the_local_influxdb_is_looked_for_now_and_then(tmp_path):
    asked = []
    service = service_for(tmp_path, find=lambda settings: asked.append(1))
    service.write_points([window_point("raw.x", 0, "VALID", 1)])
    service.write_points([window_point("raw.x", 0, "VALID", 1)])
    assert service.influx_writer() is None
    assert len(asked) == 1  # at most every LOCAL_INFLUX_CHECK_S
    assert service.status()["influx"] is None
    assert service.flush(0.1)  # nothing to send anywhere


def test_the_local_influxdb_is_used_once_it_runs(tmp_path):
    service = service_for(tmp_path, find=lambda settings: "http://127.0.0.1:1")
    service.write_points([window_point("raw.x", 0, "VALID", 1)])
    writer = service.influx_writer()
    assert writer is not None and writer.url == "http://127.0.0.1:1"
    assert writer.database == "mesh"
