"""A local InfluxDB 1.x for the mesh and the tests: Debian's ``influxd`` with a config of ours.

Why not the packaged service: it listens on every interface and keeps its data in /var/lib. Ours
runs as an ordinary :class:`~shared.local_process.LocalProcess` called ``influxdb``, keeps config,
data, log and pid file under ``$MESH_HOME/influxdb/``, and listens on 127.0.0.1 only: the HTTP
API on ``settings.influx_port`` (or the next free port) and the backup/RPC service on another free
port; every other listener InfluxDB has (graphite, collectd, opentsdb, udp, ifql, the unix socket)
is switched off in the config. ``INFLUXDB_*`` environment variables, which influxd reads as
overrides of its config file, are removed from its environment so none can re-open them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from hosting.servers.local_server import LocalServer
from hosting.servers.ports import first_free
from shared.endpoints import INFLUXDB, influx_url_file, local_influx_url
from shared.influx.errors import InfluxError
from shared.influx.transport import TRANSPORT_ERRORS, call
from shared.settings import Settings

__all__ = ["HOST", "LocalInflux", "installed"]

HOST = "127.0.0.1"
NAME = INFLUXDB


def installed() -> bool:
    """Whether ``influxd`` is on PATH (``python -m hosting.servers.influx_install`` installs it)."""
    return shutil.which("influxd") is not None


class LocalInflux(LocalServer[str]):
    """Start, find and stop the InfluxDB whose files live in ``settings.home / "influxdb"``;
    where it listens is its URL, ``http://127.0.0.1:<port>``."""

    name = NAME
    program = "influxd"
    error = InfluxError
    foreign_env = ("INFLUXDB_",)

    def __init__(self, settings: Settings, *, start_timeout_s: float = 30.0) -> None:
        super().__init__(settings, start_timeout_s=start_timeout_s)
        self.config_file = self.dir / "influxdb.conf"
        self.url_file = influx_url_file(settings.home)

    def running_url(self) -> str | None:
        """The URL of our InfluxDB if its process is alive (it may still be starting)."""
        return self.running()

    def _launch_plan(self) -> tuple[list[str], str]:
        influxd = shutil.which("influxd")
        if influxd is None:
            raise InfluxError(
                "influxd not found on PATH: run `python -m hosting.servers.influx_install` "
                "(as root), or `sudo apt-get install influxdb influxdb-client`"
            )
        http_port = first_free(HOST, self.settings.influx_port)
        rpc_preferred = http_port + 2 if self.settings.influx_port else 0
        rpc_port = first_free(HOST, rpc_preferred, avoid={http_port})
        self.config_file.write_text(self._config(http_port, rpc_port))
        return [influxd, "-config", str(self.config_file)], f"http://{HOST}:{http_port}"

    def _ready(self, info: str) -> bool:
        try:
            return call("GET", info, "/ping", {}, timeout_s=1.0).status == 204
        except TRANSPORT_ERRORS:
            return False

    def _describe(self, info: str) -> str:
        return f"{info}/ping"

    def _published(self) -> str | None:
        return local_influx_url(self.settings)

    def _publish(self, info: str) -> None:
        self.url_file.write_text(info + "\n")

    def _unpublish(self) -> None:
        self.url_file.unlink(missing_ok=True)

    def _config(self, http_port: int, rpc_port: int) -> str:
        home = self.dir
        return _CONFIG.format(
            host=HOST,
            http_port=http_port,
            rpc_port=rpc_port,
            meta=_toml(home / "meta"),
            data=_toml(home / "data"),
            wal=_toml(home / "wal"),
        )


def _toml(path: Path) -> str:
    """``path`` as a TOML basic string."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


# Debian's influxd 1.6.7 spells the reporting switch ``reporting-enabled`` (upstream:
# ``reporting-disabled``); both are given, unknown keys are ignored. The monitor's _internal
# database, the query log and the HTTP access log are off: they would grow without bound.
# The write cache goes to disk at 4 MiB instead of 25: in the third and fourth hour-long soaks
# InfluxDB's own memory (anonymous, its mapped files not counted) rose ~30 MiB in a straight
# line with its series flat at 190, about what a cache filling toward its first 25 MiB snapshot
# would hold at the aggregator's rate. With 4 MiB the fifth run's InfluxDB rose to 26 MiB, fell
# back to 12 and rose again (docs/reliability.md, "A fifth run"): bounded, not yet level.
_CONFIG = """\
# Written by hosting/servers/influx.py at every start; edits are lost.
reporting-disabled = true
reporting-enabled = false
bind-address = "{host}:{rpc_port}"

[meta]
  dir = {meta}

[data]
  dir = {data}
  wal-dir = {wal}
  query-log-enabled = false
  cache-snapshot-memory-size = "4m"

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[http]
  enabled = true
  bind-address = "{host}:{http_port}"
  log-enabled = false
  unix-socket-enabled = false

[ifql]
  enabled = false
  bind-address = "{host}:0"

[logging]
  suppress-logo = true

[[graphite]]
  enabled = false

[[collectd]]
  enabled = false

[[opentsdb]]
  enabled = false

[[udp]]
  enabled = false
"""
