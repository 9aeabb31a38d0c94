"""An Apache Kafka node in KRaft mode, run from the jar cache on loopback: the single broker, or
one node of a local cluster (:mod:`hosting.servers.kafka_cluster`).

The broker is a local server like the others (:mod:`hosting.servers.local_server`): an ordinary
:class:`~shared.local_process.LocalProcess` called ``kafka``, with its data, log, pid file and
published address under ``MESH_HOME/kafka``. Starting is idempotent and serialised by a file lock,
so two ``mesh up`` at once never start two brokers; stopping only signals the process this folder
started (the pid file must point at a process carrying this folder's tag). Its address goes to
``MESH_HOME/kafka/bootstrap`` (what :func:`shared.endpoints.resolve_bootstrap` reads) only once
it answers. A node of a cluster lives under ``MESH_HOME/kafka-N`` (node 1 keeps
``MESH_HOME/kafka``), takes its ports and cluster id from the cluster's plan
(:mod:`hosting.servers.cluster_plan`) and shares node 1's passwords and TLS files; the cluster,
not the node, publishes the bootstrap list.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from hosting.servers import broker_security
from hosting.servers.broker_security import Passwords
from hosting.servers.broker_tls import BrokerTls, ensure_broker_tls
from hosting.servers.cluster_plan import ClusterPlan, NodePlan
from hosting.servers.local_server import LocalServer
from hosting.servers.ports import first_free
from shared.class_archive import class_archive
from shared.endpoints import BROKER, bootstrap_file, broker_process_name
from shared.errors import MeshError
from shared.jar_cache import classpath
from shared.kafka.replication import Durability
from shared.kafka.security import ADMIN, Credentials, ca_file, local_ca, login_config
from shared.settings import PROJECT_ROOT, Settings

LOG4J_CONFIG = PROJECT_ROOT / "infra" / "kafka" / "log4j2.properties"


#: The broker's own topics on a single broker: one replica, one in sync.
ALONE = Durability(1, 1)


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


class LocalBroker(LocalServer[BrokerInfo]):
    """Start, find and stop the local broker whose files live in ``settings.home / "kafka"``,
    or (given the cluster's plan) node ``node`` of the local cluster."""

    name = BROKER
    program = "the Kafka broker"
    error = BrokerError

    def __init__(self, settings: Settings, plan: ClusterPlan | None = None, node: int = 1) -> None:
        # A MESH_HOME made as a cluster: its node 1 (whoever asks) never acts as a lone broker.
        self.plan = plan or ClusterPlan.load(settings.home)
        self.node: NodePlan | None = self.plan.node(node) if self.plan else None
        if self.plan is not None:
            self.name = broker_process_name(node)
            self.program = f"Kafka node {node} of {self.plan.size}"
        super().__init__(settings, start_timeout_s=settings.broker_start_timeout)
        #: Where the cluster's shared files live (node 1's folder): passwords, TLS, the plan.
        self.cluster_dir = settings.home / BROKER
        self.data_dir = self.dir / "data"
        self.config_file = self.dir / "server.properties"
        self.pid_file = self.process.pid_file
        self.log_file = self.process.log_file
        #: Where it listens (ports, host); the pid is the process's own (``process.json``).
        self.info_file = self.dir / "broker.json"
        self._admin: Any = None

    # what differs from the other local servers ----------------------------------------------
    def _launch_plan(self) -> tuple[list[str], BrokerInfo]:
        if self.plan is not None and self.node is not None:
            host, port, controller_port = (self.plan.host, self.node.port,
                                           self.node.controller_port)  # fmt: skip
        else:
            host = self.settings.broker_host
            port, controller_port = self._choose_ports(host)
        formatted = (self.data_dir / "meta.properties").exists()
        secret = tls = None
        if broker_security.secure_start(self.settings, self.cluster_dir, formatted):
            secret = broker_security.passwords(self.settings, self.cluster_dir)
            tls = ensure_broker_tls(ca_file(self.settings), self.cluster_dir, [host])
        self._write_config(host, port, controller_port, secret, tls)
        self._format_storage(secret)
        archive = class_archive(self.settings, "kafka-broker", [classpath("kafka", self.settings)])
        options = archive.java_options if archive else []
        return self._java("kafka.Kafka", str(self.config_file), java_options=options), BrokerInfo(
            0, port, controller_port, host
        )

    def _ready(self, info: BrokerInfo) -> bool:
        """The admin API answers with the broker in its metadata."""

        if self._admin is None or self._admin[0] != info.bootstrap:  # a restart may move it
            config: dict[str, Any] = {"bootstrap.servers": info.bootstrap, "log_level": 0}
            if self.secure:
                admin = broker_security.passwords(self.settings, self.dir).admin
                config |= login_config(Credentials(ADMIN, admin), local_ca(self.settings))
                config.pop("error_cb")  # a refused login while it starts: ask again
            client = AdminClient(config)
            self._admin = (info.bootstrap, client)
        try:
            brokers = self._admin[1].list_topics(timeout=1).brokers
        except Exception:  # not up yet: the next probe asks again
            return False
        return bool(brokers) if self.node is None else self.node.node in brokers

    def _describe(self, info: BrokerInfo) -> str:
        quorum = ""
        if self.plan is not None:
            quorum = f" (a node joins once {self.plan.size // 2 + 1} of the {self.plan.size} start)"
        return f"on {info.bootstrap}{quorum}" + (
            " (secure: SASL/SCRAM over TLS, ACLs)" if self.secure else ""
        )

    @property
    def secure(self) -> bool:
        """Clients must log in (see :mod:`hosting.servers.broker_security`)."""
        return self.settings.broker_secure or (self.cluster_dir / broker_security.MARKER).exists()

    def _timeout_hint(self) -> str:
        return " (raise MESH_BROKER_START_TIMEOUT)"

    def _published(self) -> BrokerInfo | None:
        """The broker this folder owns, if its process is alive; a dead one's address files
        are removed, so no client is sent to it."""
        process = self.process.running()
        if process is None:
            self._unpublish()
            return None
        try:
            where = json.loads(self.info_file.read_text())
            return BrokerInfo(process.pid, where["port"], where["controller_port"], where["host"])
        except (FileNotFoundError, ValueError, TypeError, KeyError):
            return None

    def _publish(self, info: BrokerInfo) -> None:
        where = {"port": info.port, "controller_port": info.controller_port, "host": info.host}
        self.info_file.write_text(json.dumps(where))

    def _announce(self, info: BrokerInfo) -> None:
        """Clients find it through the bootstrap file only once it answers (a cluster's list is
        the cluster's to publish)."""
        if self.plan is None:
            bootstrap_file(self.settings.home).write_text(info.bootstrap + "\n")

    def _unpublish(self) -> None:
        self.info_file.unlink(missing_ok=True)
        if self.plan is None:
            bootstrap_file(self.settings.home).unlink(missing_ok=True)

    # the broker's own preparation ----------------------------------------------------------
    def _choose_ports(self, host: str) -> tuple[int, int]:
        """The preferred port or the next free one; a separate free port for the controller."""
        port = first_free(host, self.settings.broker_port)
        controller = first_free(host, port + 1 if self.settings.broker_port else 0, avoid={port})
        return port, controller

    def _write_config(
        self, host: str, port: int, controller_port: int, secret: Passwords | None,
        tls: BrokerTls | None,
    ) -> None:  # fmt: skip
        """Mode 0600: a secure broker's passwords are in it."""
        self.config_file.touch(mode=0o600)
        self.config_file.chmod(0o600)
        cluster = {}
        if self.plan is not None and self.node is not None:
            cluster = {"node": self.node.node, "voters": self.plan.voters,
                       "internal": self.plan.internal_durability}  # fmt: skip
        self.config_file.write_text(
            broker_properties(host, port, controller_port, self.data_dir, secure=secret, tls=tls,
                              **cluster)  # type: ignore[arg-type]
        )  # fmt: skip

    def _java(
        self, main_class: str, *args: str, java_options: list[str] | None = None
    ) -> list[str]:
        """The command line of a Kafka tool or (``kafka.Kafka``) the broker; the broker's class
        archive (:mod:`shared.class_archive`) is written when it stops and kept by the next
        start, as the process that started it is gone by then."""
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
            *(java_options or []),
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            "-cp",
            classpath("kafka", self.settings),
            main_class,
            *args,
        ]

    def _format_storage(self, secret: Passwords | None) -> None:
        """Format the KRaft log folder once; later starts reuse it (and its topics). A secure
        broker gets its admin's credential now: it cannot be added later."""
        if (self.data_dir / "meta.properties").exists():
            return
        cluster_id = self.plan.cluster_id if self.plan else kraft_cluster_id()
        command = self._java(
            "kafka.tools.StorageTool", "format", "--ignore-formatted",
            f"--cluster-id={cluster_id}", "--config", str(self.config_file),
            *(broker_security.format_arguments(secret) if secret else []),
        )  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:]
            raise BrokerError(f"formatting {self.data_dir} failed: {' '.join(detail)}")
        if secret is not None:
            broker_security.mark_secure(self.cluster_dir)


#: How soon a cluster's controller fences a node that stopped heartbeating, and so moves its
#: leaders to the other replicas: Kafka's 9 s (2 s beats) was most of the time routing and alerts
#: stood still after a node of the local cluster was killed or hung (issue 48). On loopback a
#: beat is never late by seconds unless the node is gone or hung; a node fenced by mistake is
#: taken back at its next beat (its partitions move, no record is lost).
CLUSTER_FAILURE_DETECTION = {
    "broker.session.timeout.ms": "5000",
    "broker.heartbeat.interval.ms": "1000",
}

#: How often each node of a cluster snapshots the KRaft metadata: Kafka's hour made the soak's
#: brokers look like leaks. A follower's live heap (after a full collection) steps up once, by
#: ~18 MiB, at its first metadata snapshot, to the level the quorum's leader holds from the
#: start, and stays there through every later snapshot (measured on the local cluster, 4-minute
#: interval: 157 -> 175 MiB at the first, flat through two more; the class histogram's growth
#: is 16 MiB of byte[], batch buffers the KRaft client keeps for reuse once it has written a
#: batch, which the leader does from the start; docs/reliability.md). Hourly, that step came at
#: the end of an hour's soak, as +41 MiB/h; every 5 minutes it comes in the warm-up, and a
#: restarted node replays at most 5 minutes of metadata log.
CLUSTER_METADATA_SNAPSHOTS = {"metadata.log.max.snapshot.interval.ms": "300000"}

#: What only a node of a cluster (broker topics replicated) gets on top of a single broker's.
CLUSTER_ONLY = CLUSTER_FAILURE_DETECTION | CLUSTER_METADATA_SNAPSHOTS


def broker_properties(
    host: str,
    port: int | str,
    controller_port: int | str,
    data_dir: Path | str,
    *,
    listen_host: str | None = None,
    advertised_host: str | None = None,
    secure: Passwords | None = None,
    tls: BrokerTls | None = None,
    node: int = 1,
    voters: str | None = None,
    internal: Durability = ALONE,
) -> str:
    """A KRaft node's ``server.properties``: the local mesh's and the broker image's (which gets
    placeholders its entrypoint fills in). ``host`` is where the controller quorum is reached;
    the listeners bind ``listen_host`` and clients are sent to ``advertised_host`` (both ``host``
    unless given: a container on a bridge network binds 0.0.0.0 and advertises a name the
    clients resolve). ``secure``: SASL listeners and ACLs (:mod:`hosting.servers.broker_security`).
    A node of a cluster names every voter (``voters``) and gives the broker's own topics
    (consumer offsets, transactions, share groups) the ``internal`` replication; alone it is node
    1, its own only voter, and everything has one replica."""
    listen = listen_host or host
    advertised = advertised_host or host
    voters = voters or f"{node}@{host}:{controller_port}"
    replicas, min_isr = str(internal.replication), str(internal.min_insync)
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{listen}:{port},CONTROLLER://{listen}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{advertised}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "8",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": min_isr,
        "default.replication.factor": replicas,
        "min.insync.replicas": min_isr,
        "group.initial.rebalance.delay.ms": "0",
        "log.cleaner.min.compaction.lag.ms": "0",
        "log.segment.bytes": str(64 * 1024 * 1024),
    }
    if internal.replication > 1:
        properties |= CLUSTER_ONLY
    if secure is not None:
        if tls is None:
            raise ValueError("a secure broker needs its TLS files")
        properties |= broker_security.secure_properties(
            listen, advertised, voters, port, controller_port, secure, tls
        )
    return "".join(f"{k}={v}\n" for k, v in properties.items())


def kraft_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 characters).

    It may start with "-", which is why the format command gets it as ``--cluster-id=ID``.
    """

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
