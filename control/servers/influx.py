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

import os
import shutil
import time
from pathlib import Path

from control.servers.ports import first_free
from shared.endpoints import INFLUXDB, influx_url_file, local_influx_url
from shared.file_lock import folder_lock
from shared.influx.errors import InfluxError
from shared.influx.transport import TRANSPORT_ERRORS, call
from shared.local_process import LocalProcess
from shared.settings import Settings

__all__ = ["HOST", "LocalInflux", "installed"]

HOST = "127.0.0.1"
NAME = INFLUXDB


def installed() -> bool:
    """Whether ``influxd`` is on PATH (``python -m control.servers.influx_install`` installs it)."""
    return shutil.which("influxd") is not None


class LocalInflux:
    """Start, find and stop the InfluxDB whose files live in ``settings.home / "influxdb"``."""

    def __init__(self, settings: Settings, *, start_timeout_s: float = 30.0) -> None:
        self.settings = settings
        self.start_timeout_s = start_timeout_s
        self.process = LocalProcess(NAME, settings.home)
        self.dir = self.process.dir
        self.config_file = self.dir / "influxdb.conf"
        self.url_file = influx_url_file(settings.home)

    def running_url(self) -> str | None:
        """The URL of our InfluxDB if its process is alive (it may still be starting)."""
        return local_influx_url(self.settings)

    def start(self) -> str:
        """Start unless running, wait until ``/ping`` answers, and return ``http://host:port``.

        Idempotent and safe to call from two processes at once: the ports, the config file and
        the URL file are chosen and written under a lock, by the caller that starts influxd.
        """
        started = False
        with folder_lock(self.dir / "starting", InfluxError):
            url = self.running_url()
            if url is None:
                url, started = self._launch()
        try:
            self._wait_ready(url)
        except BaseException:
            if started:
                self.stop(timeout=5)
            raise
        return url

    def _launch(self) -> tuple[str, bool]:
        influxd = shutil.which("influxd")
        if influxd is None:
            raise InfluxError(
                "influxd not found on PATH: run `python -m control.servers.influx_install` "
                "(as root), or `sudo apt-get install influxdb influxdb-client`"
            )
        http_port = first_free(HOST, self.settings.influx_port)
        rpc_preferred = http_port + 2 if self.settings.influx_port else 0
        rpc_port = first_free(HOST, rpc_preferred, avoid={http_port})
        self.config_file.write_text(self._config(http_port, rpc_port))
        url = f"http://{HOST}:{http_port}"
        self.url_file.write_text(url + "\n")
        _, started = self.process.start([influxd, "-config", str(self.config_file)], _env())
        return url, started

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop our InfluxDB (SIGTERM, then SIGKILL after ``timeout``); False if none ran."""
        info = self.process.stop(timeout)
        self.url_file.unlink(missing_ok=True)
        return info is not None

    def tail_log(self, lines: int = 10) -> str:
        return " | ".join(self.process.tail_log(lines)) or "(no log)"

    def _wait_ready(self, url: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.running() is None:
                raise InfluxError(
                    f"influxd exited while starting; last lines of {self.process.log_file}: "
                    f"{self.tail_log()}"
                )
            try:
                if call("GET", url, "/ping", {}, timeout_s=1.0).status == 204:
                    return
            except TRANSPORT_ERRORS:
                pass
            time.sleep(0.1)
        raise InfluxError(
            f"influxd did not answer {url}/ping within {self.start_timeout_s:.0f} s; last lines "
            f"of {self.process.log_file}: {self.tail_log()}"
        )

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


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("INFLUXDB_")}


def _toml(path: Path) -> str:
    """``path`` as a TOML basic string."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


# Debian's influxd 1.6.7 spells the reporting switch ``reporting-enabled`` (upstream:
# ``reporting-disabled``); both are given, unknown keys are ignored. The monitor's _internal
# database, the query log and the HTTP access log are off: they would grow without bound.
_CONFIG = """\
# Written by control/servers/influx.py at every start; edits are lost.
reporting-disabled = true
reporting-enabled = false
bind-address = "{host}:{rpc_port}"

[meta]
  dir = {meta}

[data]
  dir = {data}
  wal-dir = {wal}
  query-log-enabled = false

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
