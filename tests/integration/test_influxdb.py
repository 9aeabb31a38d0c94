"""The InfluxDB path against a real influxd 1.6.7: awkward names round-trip exactly, a replayed
batch changes nothing, and the writer rides out a restart of the server.

Each test writes to a database of its own on the session's InfluxDB; the restart test runs a
second InfluxDB in its own home so the session's one stays up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hosting.servers.influx import LocalInflux
from shared.influx.line_protocol import Point
from shared.influx.writer import InfluxWriter
from shared.settings import Settings
from testkit.influx_query import query

pytestmark = pytest.mark.integration

T0 = 1_795_350_000_000_000_000  # ns


@pytest.fixture
def database(influxdb: Any, unique_name: Callable[[str], str]) -> str:
    return unique_name("influx-test")


def test_awkward_names_and_values_round_trip_exactly(influxdb: Any, database: str) -> None:
    measurement = 'cpu load, "all"=total ü'
    tag_key = 'host name,=x "k"'
    tag_value = 'big box, rack=7 "west" 漢字'
    field_key = 'user time,="f"'
    text = 'he said "hi", then a=b \\ and left é'
    point = Point(
        measurement,
        {tag_key: tag_value, "plain": "v", "empty": ""},
        {field_key: text, "n": 42, "f": 0.1, "big": 1e100, "ok": True, "nan": float("nan")},
        T0,
    )
    writer = InfluxWriter(influxdb.url, database)
    writer.write([point])
    assert writer.stats().written == 1, writer.stats()

    measurements = query(influxdb.url, database, "SHOW MEASUREMENTS")
    assert measurements == [{"name": measurement}]
    tag_keys = query(influxdb.url, database, "SHOW TAG KEYS")
    assert sorted(row["tagKey"] for row in tag_keys) == sorted([tag_key, "plain"])
    tag_values = query(influxdb.url, database, "SHOW TAG VALUES WITH KEY =~ /.*/")
    assert sorted((row["key"], row["value"]) for row in tag_values) == sorted(
        [(tag_key, tag_value), ("plain", "v")]
    )
    field_keys = query(influxdb.url, database, "SHOW FIELD KEYS")
    assert {row["fieldKey"]: row["fieldType"] for row in field_keys} == {
        field_key: "string",
        "n": "integer",
        "f": "float",
        "big": "float",
        "ok": "boolean",
    }

    [row] = query(influxdb.url, database, f"SELECT * FROM {_ident(measurement)}", epoch="ns")
    assert row == {
        "time": T0,
        field_key: text,
        "n": 42,
        "f": 0.1,
        "big": 1e100,
        "ok": True,
        tag_key: tag_value,
        "plain": "v",
    }


def test_replaying_a_batch_leaves_identical_data(influxdb: Any, database: str) -> None:
    batch = [
        Point(
            "records.in",
            {"service": "detector.velocity", "scope": scope, "instance": f"i-{i % 3}"},
            {"count": 100 * i, "m1_rate": i / 3},
            T0 + i * 1_000_000_000,
        )
        for i in range(200)
        for scope in ("all", "instance")
    ]
    writer = InfluxWriter(influxdb.url, database, batch_size=150)

    writer.write(batch)
    first = _everything(influxdb.url, database)
    writer.write(batch)
    writer.write(reversed(batch))
    again = _everything(influxdb.url, database)

    assert writer.stats().written == 3 * len(batch)
    assert again == first
    assert len(first["rows"]) == len(batch)
    count = query(influxdb.url, database, 'SELECT count("count") FROM "records.in"')
    assert count[0]["count"] == len(batch)


@pytest.fixture
def second_influx(tmp_path: Path) -> Iterator[LocalInflux]:
    settings = replace(Settings.from_env({}), home=tmp_path / "home", influx_port=0)
    server = LocalInflux(settings)
    yield server
    server.stop()


def test_writer_buffers_while_influxdb_is_down_and_delivers_after_restart(
    second_influx: LocalInflux,
) -> None:
    url = second_influx.start()
    port = int(url.rsplit(":", 1)[1])
    writer = InfluxWriter(url, "survivor", backoff_initial_s=0.05, backoff_max_s=0.2)
    writer.write(_counts(0, 10))
    assert writer.stats().written == 10

    assert second_influx.stop()
    writer.write(_counts(10, 25))
    down = writer.stats()
    assert (down.written, down.buffered, down.healthy) == (10, 15, False)
    assert down.failures >= 1 and down.last_error
    assert writer.flush(0.3) is False  # still down: keeps them, does not raise

    # Same home (data kept) and same port, so the writer's URL is valid again.
    second_influx.settings = replace(second_influx.settings, influx_port=port)
    assert second_influx.start() == url
    assert writer.flush(10.0)
    up = writer.stats()
    assert (up.written, up.buffered, up.healthy, up.dropped) == (25, 0, True, 0)
    rows = query(url, "survivor", 'SELECT "n" FROM "ticks"', epoch="ns")
    assert [row["n"] for row in rows] == list(range(25))


def _counts(start: int, stop: int) -> list[Point]:
    return [Point("ticks", {"source": "test"}, {"n": i}, T0 + i) for i in range(start, stop)]


def _everything(url: str, database: str) -> dict[str, Any]:
    return {
        "series": query(url, database, "SHOW SERIES"),
        "rows": query(url, database, 'SELECT * FROM "records.in"', epoch="ns"),
    }


def _ident(name: str) -> str:
    """An InfluxQL double-quoted identifier."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_local_influxdb_listens_on_loopback_only_and_start_is_idempotent(
    second_influx: LocalInflux,
) -> None:
    url = second_influx.start()
    assert second_influx.start() == url == second_influx.running_url()
    info = second_influx.process.running()
    assert info is not None
    addresses = _listening_addresses(info.pid)
    assert len(addresses) == 2, addresses  # HTTP API and the backup/RPC service, nothing else
    assert all(host == "127.0.0.1" for host, _ in addresses), addresses
    assert ("127.0.0.1", int(url.rsplit(":", 1)[1])) in addresses


def _listening_addresses(pid: int) -> list[tuple[str, int]]:
    """(host, port) of every TCP socket ``pid`` listens on, from /proc (IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = str(fd.readlink()) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A = LISTEN
                address, port = local.split(":")
                found.append((_host(address), int(port, 16)))
    return found


def _host(hex_address: str) -> str:
    if len(hex_address) == 8:  # IPv4, little-endian
        return ".".join(str(int(hex_address[i : i + 2], 16)) for i in (6, 4, 2, 0))
    return "::" if int(hex_address, 16) == 0 else hex_address
