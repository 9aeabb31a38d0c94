"""Typed settings, read once from ``MESH_*`` environment variables.

One frozen object holds every setting with its default; nothing else in the project reads the
environment for configuration, and no address is hard-coded anywhere else. Each field's environment
variable is ``MESH_`` plus the field name in upper case (``MESH_BROKER_PORT`` for ``broker_port``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shared.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Settings:
    """Configuration shared by the CLI, the services and the tests."""

    #: Kafka to use instead of starting one (``host:port[,host:port...]``); empty = start our own.
    bootstrap_servers: str = ""
    #: Where the local mesh keeps data, logs and pid files.
    home: Path = field(default_factory=lambda: PROJECT_ROOT / ".mesh")
    #: Where fetched jars live (git-ignored).
    cache: Path = field(default_factory=lambda: PROJECT_ROOT / ".cache")
    #: Where builds that do not depend on the checkout are kept (the Jaeger binary, Go's module
    #: and build caches): per user, as pip's and Maven's caches are, so a second clone finds
    #: them instead of building Jaeger again (~8 min on two cores).
    build_cache: Path = field(default_factory=lambda: user_build_cache(os.environ))
    #: Interface the local broker binds to. Loopback only, by design.
    broker_host: str = "127.0.0.1"
    #: Preferred port of the local broker; the next free one is used if it is busy.
    broker_port: int = 9092
    #: Nodes of the local Kafka a new MESH_HOME gets: 1, the embedded broker (the default), or a
    #: KRaft cluster on loopback (3 survives losing one node: replication 3, min.insync 2). A
    #: MESH_HOME's Kafka keeps the size it was made with.
    brokers: int = 1
    #: Start the local broker secure: clients must log in (SASL/SCRAM) and each may do only what
    #: its ACLs allow; no listener takes an anonymous client (docs/security.md).
    broker_secure: bool = False
    #: The principal this process logs in to Kafka as (a secure cluster); empty: the local secure
    #: broker's admin when ``broker_secure``, else no login.
    kafka_username: str = ""
    #: A file holding that principal's password (never the password itself: an environment
    #: variable ends up in process listings and logs).
    kafka_password_file: Path | None = None
    #: The CA certificate (PEM) that signed the cluster's TLS certificate: set, clients log in
    #: over TLS (SASL_SSL). Empty: the local secure mesh's own CA when there is one, else none.
    kafka_ca_file: Path | None = None
    #: Seconds to wait for a local broker to accept requests.
    broker_start_timeout: float = 90.0
    #: Start the mesh's own JVMs from a class data sharing archive, written by the first JVM of
    #: each kind at its clean stop (:mod:`shared.class_archive`): a cold start needs less CPU
    #: and `mesh up` says ready ~20 s sooner. Off by default: a feed started at "ready" then meets
    #: more of the JIT's compiling, and the tail measured from ready was worse (issue 29,
    #: docs/benchmarks.md "The first minutes"); nor has a whole `make test` passed with it on.
    jvm_class_archive: bool = False
    #: Heap of the local broker's JVM.
    broker_heap: str = "512m"
    #: Topic declarations applied by ``mesh topics apply``.
    topics_file: Path = field(default_factory=lambda: PROJECT_ROOT / "infra" / "topics.yaml")
    #: Avro schema folder.
    schemas_dir: Path = field(default_factory=lambda: PROJECT_ROOT / "schemas")
    #: Prefix of every topic and consumer group the mesh's detectors use, so that several private
    #: meshes (the tests) can share one cluster. Empty in a real deployment.
    topic_prefix: str = ""
    #: InfluxDB HTTP endpoint for the metrics aggregator; empty = the local one, if installed.
    influx_url: str = ""
    #: InfluxDB database the aggregator writes to (created if missing).
    influx_db: str = "mesh"
    #: Preferred port of the local InfluxDB; the next free one is used if it is busy.
    influx_port: int = 8086
    #: Seconds between two metric snapshots of a service instance (also sent at shutdown).
    metrics_interval_s: float = 10.0
    #: Seconds of silence after which the aggregator calls an instance stale: its gauges and rates
    #: drop out of the totals, its counts stay.
    metrics_stale_after_s: float = 60.0
    #: Seconds between two looks of the autoscaler at the autoscaled detectors' lag (each look
    #: may step one detector's replicas; docs/autoscale.md).
    autoscale_interval_s: float = 5.0
    #: Days of event dates the history keeps (whole days; older ones are deleted by its upkeep).
    history_days: int = 60
    #: Where the history's tables live: a Hadoop path; empty = ``file://$MESH_HOME/history/tables``.
    history_location: str = ""
    #: OTLP endpoint for traces (falls back to ``OTEL_EXPORTER_OTLP_ENDPOINT``).
    otlp_endpoint: str = ""
    #: The trace backend's query API and UI (Jaeger), when it is not the local mesh's own (the
    #: container mesh's, for example); empty = the local one, if it runs.
    trace_ui_url: str = ""
    #: The environment these settings were read from, kept so a service's own section
    #: (``MESH_INGEST_*``, ``MESH_TRACE_*``) is read from the same snapshot: a process reads
    #: its environment once, here, and every config object derives from this one.
    environment: dict[str, str] = field(
        default_factory=dict, compare=False, repr=False, metadata={"variable": False}
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``env`` (default: ``os.environ``); bad values raise ConfigError."""
        env = dict(os.environ if env is None else env)
        values = env_values(cls, "MESH_", env)
        if "otlp_endpoint" not in values and env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            values["otlp_endpoint"] = env["OTEL_EXPORTER_OTLP_ENDPOINT"]
        return cls(**values, environment=env)  # type: ignore[arg-type]

    @property
    def uses_external_kafka(self) -> bool:
        """True when MESH_BOOTSTRAP_SERVERS names a cluster: then nothing is started."""
        return bool(self.bootstrap_servers)

    @property
    def jars_dir(self) -> Path:
        return self.cache / "jars"


def user_build_cache(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/detector-mesh``, by default ``~/.cache/detector-mesh``."""
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "detector-mesh"


def env_values(cls: type, prefix: str, env: Mapping[str, str]) -> dict[str, object]:
    """Field values of dataclass ``cls`` found in ``env`` as ``PREFIX + FIELD_NAME``, converted.

    Every service's settings object uses this, so each setting has an environment variable named
    after it and a bad value names the variable to fix.
    """
    values: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if not f.metadata.get("variable", True):
            continue
        name = prefix + f.name.upper()
        raw = env.get(name)
        if raw is not None and raw != "":
            values[f.name] = _convert(name, raw, f.type)
    return values


def _convert(name: str, raw: str, type_name: object) -> object:
    """Turn one environment string into the field's type, or say which variable is wrong."""
    type_name = str(type_name).removesuffix(" | None")
    if type_name == "int":
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(
                f"{name}={raw!r} is not an integer; set it to a whole number"
            ) from None
    if type_name == "float":
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a number; set it to e.g. 30 or 2.5") from None
    if type_name == "Path":
        return Path(raw).expanduser()
    if type_name == "bool":
        if raw.lower() in {"1", "true", "yes", "on"}:
            return True
        if raw.lower() in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(f"{name}={raw!r} is not a boolean; set it to true or false")
    return raw
