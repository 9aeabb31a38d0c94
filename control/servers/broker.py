"""A single-node Apache Kafka broker in KRaft mode, run from the jar cache on loopback.

The broker is an ordinary child process of whoever starts it (``mesh broker start`` / ``mesh up``,
or the test session), with its data, log, pid file and published address under
``MESH_HOME/kafka``. Starting is idempotent and serialised by a file lock, so two ``mesh up`` at
once never start two brokers; stopping only signals the process this module started (the pid file
must point at a JVM running our own config file).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from control.servers.ports import first_free
from shared.errors import MeshError
from shared.file_lock import folder_lock
from shared.jar_cache import classpath
from shared.kafka.config import bootstrap_file
from shared.pids import wait_gone
from shared.settings import PROJECT_ROOT, Settings

LOG4J_CONFIG = PROJECT_ROOT / "infra" / "kafka" / "log4j2.properties"


class BrokerError(MeshError):
    """The local broker could not be started, reached or stopped."""


@dataclass(frozen=True)
class BrokerInfo:
    """What a running local broker published about itself."""

    pid: int
    port: int
    controller_port: int
    host: str

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


class LocalBroker:
    """Start, find and stop the local broker whose files live in ``settings.home / "kafka"``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.dir = settings.home / "kafka"
        self.data_dir = self.dir / "data"
        self.config_file = self.dir / "server.properties"
        self.pid_file = self.dir / "broker.json"
        self.log_file = self.dir / "broker.log"

    # ----------------------------------------------------------------- queries
    def running(self) -> BrokerInfo | None:
        """The broker this folder owns, if its process is alive; stale pid files are removed."""
        try:
            info = BrokerInfo(**json.loads(self.pid_file.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            return None
        if self._owns(info.pid):
            return info
        self._forget()
        return None

    def _owns(self, pid: int) -> bool:
        """True when ``pid`` is a live JVM running ``kafka.Kafka`` with our config file."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"kafka.Kafka" in cmdline and str(self.config_file).encode() in cmdline

    # ----------------------------------------------------------------- start
    def start(self) -> tuple[BrokerInfo, bool]:
        """Start the broker unless it runs; returns its info and whether this call started it."""
        with self._lock():
            existing = self.running()
            if existing is not None:
                return existing, False
            host = self.settings.broker_host
            port, controller_port = self._choose_ports(host)
            self._write_config(host, port, controller_port)
            self._format_storage()
            process = self._launch()
            info = BrokerInfo(process.pid, port, controller_port, host)
            self.pid_file.write_text(json.dumps(info.__dict__))
            try:
                self._wait_ready(info, process)
            except BaseException:
                self._kill(process.pid)
                self._forget()
                raise
            bootstrap_file(self.settings).write_text(info.bootstrap + "\n")
            return info, True

    def _choose_ports(self, host: str) -> tuple[int, int]:
        """The preferred port or the next free one; a separate free port for the controller."""
        port = first_free(host, self.settings.broker_port)
        controller = first_free(host, port + 1 if self.settings.broker_port else 0, avoid={port})
        return port, controller

    def _write_config(self, host: str, port: int, controller_port: int) -> None:
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{host}:{controller_port}",
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "8",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.cleaner.min.compaction.lag.ms": "0",
            "log.segment.bytes": str(64 * 1024 * 1024),
        }
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))

    def _java(self, main_class: str, *args: str) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise BrokerError(
                "`java` not found on PATH: install Java 17 (as root: apt-get install "
                "openjdk-17-jre-headless)"
            )
        return [
            java,
            f"-Xmx{self.settings.broker_heap}",
            f"-Xms{self.settings.broker_heap}",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            "-cp",
            classpath("kafka", self.settings),
            main_class,
            *args,
        ]

    def _format_storage(self) -> None:
        """Format the KRaft log folder once; later starts reuse it (and its topics)."""
        if (self.data_dir / "meta.properties").exists():
            return
        cluster_id = _kraft_cluster_id()
        command = self._java(
            "kafka.tools.StorageTool", "format", "--ignore-formatted",
            f"--cluster-id={cluster_id}", "--config", str(self.config_file),
        )  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:]
            raise BrokerError(f"formatting {self.data_dir} failed: {' '.join(detail)}")

    def _launch(self) -> subprocess.Popen[bytes]:
        log = self.log_file.open("ab")
        try:
            return subprocess.Popen(
                self._java("kafka.Kafka", str(self.config_file)),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the caller's terminal does not kill it
            )
        finally:
            log.close()

    def _wait_ready(self, info: BrokerInfo, process: subprocess.Popen[bytes]) -> None:
        """Poll the admin API until the broker answers with itself in the metadata."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + self.settings.broker_start_timeout
        admin = AdminClient({"bootstrap.servers": info.bootstrap, "log_level": 0})
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise BrokerError(
                    f"the Kafka broker exited with code {process.returncode} while starting; "
                    f"last log lines: {self.tail_log(5)}"
                )
            with contextlib.suppress(Exception):
                metadata = admin.list_topics(timeout=1)
                if metadata.brokers:
                    return
            time.sleep(0.2)
        raise BrokerError(
            f"the Kafka broker did not answer on {info.bootstrap} within "
            f"{self.settings.broker_start_timeout:.0f} s (raise MESH_BROKER_START_TIMEOUT, "
            f"or read {self.log_file})"
        )

    # ----------------------------------------------------------------- stop
    def stop(self, timeout: float = 30.0) -> BrokerInfo | None:
        """Stop our broker (SIGTERM, then SIGKILL after ``timeout``); None if none was running."""
        with self._lock():
            info = self.running()
            if info is None:
                return None
            os.kill(info.pid, signal.SIGTERM)
            if not wait_gone(info.pid, timeout):
                self._kill(info.pid)
            self._forget()
            return info

    def _kill(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_gone(pid, 10)

    def _forget(self) -> None:
        for path in (self.pid_file, bootstrap_file(self.settings)):
            path.unlink(missing_ok=True)

    # ----------------------------------------------------------------- helpers
    def tail_log(self, lines: int) -> str:
        try:
            text = self.log_file.read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return "(no log)"
        return " | ".join(text[-lines:])

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return folder_lock(self.dir, BrokerError)


def _kraft_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 characters).

    It may start with "-", which is why the format command gets it as ``--cluster-id=ID``.
    """
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
