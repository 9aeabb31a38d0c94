"""A Spark standalone cluster (master + worker) from pyspark's own scripts, on loopback.

The pyspark wheel ships ``bin/spark-class`` and ``bin/spark-submit`` but not ``start-master.sh``;
this module starts the master and worker classes directly. It exists to prove (in a test) and to
show (in docs/ingest.md) that the ingest job is submittable unchanged to a real cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from hosting.servers.ports import ephemeral_port
from shared.pids import wait_gone

SPARK_HOME = Path(pyspark.__file__).parent


@dataclass
class StandaloneCluster:
    """One master and one worker, each an ordinary child process, logs under ``work_dir``."""

    work_dir: Path
    cores: int = 2
    memory: str = "1g"
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_WORKER_DIR": str(self.work_dir / "worker"),
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }

    def _spawn(self, name: str, *args: str) -> None:
        log = (self.work_dir / f"{name}.log").open("ab")
        command = [str(SPARK_HOME / "bin" / "spark-class"), *args]
        self.processes.append(
            subprocess.Popen(command, env=self._env(), stdout=log, stderr=subprocess.STDOUT)
        )
        log.close()

    def start(self, timeout: float = 60.0) -> StandaloneCluster:
        """Start master then worker; if either fails, stop what did start before raising."""
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self, timeout: float) -> StandaloneCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = ephemeral_port("127.0.0.1")
        ui = str(ephemeral_port("127.0.0.1"))
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", ui)  # fmt: skip
        self._wait_log("master", "I have been elected leader", timeout)
        self._spawn("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--webui-port", str(ephemeral_port("127.0.0.1")), "--cores", str(self.cores),
                    "--memory", self.memory, self.url)  # fmt: skip
        self._wait_log("worker", "Successfully registered with master", timeout)
        return self

    def _wait_log(self, name: str, text: str, timeout: float) -> None:
        path = self.work_dir / f"{name}.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists() and text in path.read_text(errors="replace"):
                return
            time.sleep(0.3)
        raise RuntimeError(f"spark {name} did not start: see {path}")

    def submit_command(self, script: Path, jars: list[Path], *conf: str) -> list[str]:
        """``spark-submit`` of a Python job to this cluster, driver on loopback.

        ``--jars`` is needed: under spark-submit the driver JVM exists before the job's code runs,
        so the connectors must be on the command line to be on the driver's class path.
        """
        options = [
            "--jars",
            ",".join(str(jar) for jar in jars),
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.driver.bindAddress=127.0.0.1",
        ]
        for item in conf:
            options += ["--conf", item]
        return [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            self.url,
            *options,
            str(script),
        ]

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                if not wait_gone(process.pid, 20):
                    process.kill()
                    wait_gone(process.pid, 10)
        self.processes.clear()
