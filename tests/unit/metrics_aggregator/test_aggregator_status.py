"""Counters, the instance table and the status document; the command line's refusals."""

from __future__ import annotations

import threading

import pytest

from services.metrics_aggregator.config import AggregatorConfig
from services.metrics_aggregator.main import main
from services.metrics_aggregator.status import Counters, InstanceTable, status_document
from shared.errors import ConfigError
from shared.influx.files import FileStats
from shared.influx.writer import WriterStats
from shared.settings import Settings


def test_counters_add_up_across_threads():
    counters = Counters()

    def work() -> None:
        for _ in range(1000):
            counters.add("series", snapshots_in=2)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    figures = counters.snapshot()
    assert (figures["batches"], figures["snapshots_in"]) == (4000, 8000)
    assert figures["batches_by_query"] == {"series": 4000}


def test_the_instance_table_counts_distinct_ids_live_and_stale():
    table = InstanceTable(stale_after_ms=60_000)
    table.update([
        {"service": "s", "name": "a", "tags": "[]", "instance": None, "time_ms": 0},
        {"service": "s", "name": "a", "tags": "[]", "instance": "i1", "time_ms": 100_000},
        {"service": "s", "name": "b", "tags": "[]", "instance": "i1", "time_ms": 90_000},
        {"service": "s", "name": "b", "tags": "[]", "instance": "i2", "time_ms": 10_000},
    ])  # fmt: skip
    assert table.figures(now_ms=110_000) == {"series": 2, "live": 1, "stale": 1}


def test_the_status_document_has_what_mesh_status_shows():
    counters = Counters()
    counters.add("series", snapshots_in=5)
    doc = status_document(
        instance_id="metrics_aggregator@h:1:2",
        state="running",
        started_s=1.0,
        counters=counters.snapshot(),
        instances={"series": 3, "live": 2, "stale": 1},
        files=FileStats(4, 100, 0, "", "/m/metrics-2026-11-22.lp"),
        files_dir="/m",
        influx=WriterStats(4, 0, 0, 0, 1, "down", True, 5),
        influx_target=("http://127.0.0.1:8086", "mesh"),
        topics={"metrics": "metrics", "windows": "metrics.windows", "dlq": "metrics.dlq"},
        now_s=2.0,
    )
    assert doc["batches"] == 1 and doc["snapshots_in"] == 5 and doc["dead_letters"] == 0
    assert doc["series"] == 3 and doc["instances"] == {"live": 2, "stale": 1}
    assert doc["influx"]["buffered"] == 0 and doc["influx"]["healthy"] is True
    assert doc["influx"]["url"] == "http://127.0.0.1:8086"
    assert doc["files"]["written"] == 4


def test_the_config_follows_the_topic_prefix_and_reporting_interval_and_refuses_a_zero_ttl():
    settings = Settings(topic_prefix="t1.", metrics_stale_after_s=30, metrics_interval_s=2.0)
    config = AggregatorConfig.from_settings(settings, trigger_s=None)
    assert (config.metrics_topic, config.windows_topic, config.dlq_topic) == (
        "t1.metrics", "t1.metrics.windows", "t1.metrics.dlq",
    )  # fmt: skip
    assert config.stale_after_ms == 30_000 and config.trigger == "2000 milliseconds"
    with pytest.raises(ConfigError, match="STALE_AFTER"):
        AggregatorConfig.from_settings(settings, stale_after_s=0.0)


@pytest.mark.parametrize(
    "argv",
    [["--trigger", "soon"], ["--no-such-option"], ["--stale-after", "-1"], ["extra"]],
)
def test_bad_options_are_one_line_and_exit_2(argv, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    monkeypatch.setenv("MESH_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("metrics_aggregator: error:")


def test_a_bad_setting_names_the_variable(capsys, monkeypatch):
    monkeypatch.setenv("MESH_METRICS_STALE_AFTER_S", "soon")
    assert main([]) == 2
    assert "MESH_METRICS_STALE_AFTER_S" in capsys.readouterr().err
