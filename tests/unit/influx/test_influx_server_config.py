"""The config LocalInflux writes: InfluxDB listens on 127.0.0.1 only, its files stay in the home."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from hosting.servers.influx import LocalInflux
from shared.settings import Settings


def config(tmp_path: Path) -> dict[str, Any]:
    server = LocalInflux(replace(Settings.from_env({}), home=tmp_path / "home"))
    return tomllib.loads(server._config(18086, 18088))


def test_every_address_is_loopback_and_every_other_listener_is_off(tmp_path: Path) -> None:
    parsed = config(tmp_path)
    assert parsed["bind-address"] == "127.0.0.1:18088"
    assert parsed["http"]["bind-address"] == "127.0.0.1:18086"
    assert parsed["http"]["unix-socket-enabled"] is False
    assert parsed["ifql"]["enabled"] is False
    for listener in ("graphite", "collectd", "opentsdb", "udp"):
        assert [section["enabled"] for section in parsed[listener]] == [False]
    assert parsed["reporting-disabled"] is True
    assert parsed["reporting-enabled"] is False


def test_meta_data_and_wal_live_under_the_mesh_home(tmp_path: Path) -> None:
    parsed = config(tmp_path)
    home = tmp_path / "home" / "influxdb"
    assert parsed["meta"]["dir"] == str(home / "meta")
    assert parsed["data"]["dir"] == str(home / "data")
    assert parsed["data"]["wal-dir"] == str(home / "wal")
