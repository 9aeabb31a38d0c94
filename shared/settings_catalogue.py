"""Every ``MESH_*`` variable of the project, declared once: type, default, what it does.

The settings of a running mesh come from four typed declarations, and this module reads them
rather than repeating them: :class:`shared.settings.Settings` (``MESH_*``),
:class:`shared.service_settings.IngestSettings` (``MESH_INGEST_*``),
:class:`shared.service_settings.NotifierSettings` (``MESH_NOTIFIER_*``) and
:class:`shared.tracing.config.TracingConfig` (``MESH_TRACE_*``). A field's description is the
``#:`` comment above it in the source (the code is the documentation). The variables that are not
settings of a running mesh (the compose file's ports, what the control plane sets for the
processes it starts, the images', the benchmarks' and the tests' knobs) are declared in
:data:`OTHER`. ``tests/unit/test_settings_catalogue.py`` fails when the code names a ``MESH_``
variable declared nowhere here.

No setting holds a secret: a password is given as a file's path (``MESH_KAFKA_PASSWORD_FILE``),
whose content nothing here reads, so ``mesh settings`` prints every value as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from shared.field_docs import default_of, field_docs, value_text
from shared.service_settings import IngestSettings, NotifierSettings
from shared.settings import Settings, env_values
from shared.tracing.config import TracingConfig


@dataclass(frozen=True)
class Declared:
    """One variable: its section, name, type, default (as text) and what it does."""

    section: str
    variable: str
    type: str
    default: str
    description: str


#: (section, variable prefix, declaring class): the settings of a running mesh.
SECTIONS: tuple[tuple[str, str, type], ...] = (
    ("mesh", "MESH_", Settings),
    ("ingest", "MESH_INGEST_", IngestSettings),
    ("notifier", "MESH_NOTIFIER_", NotifierSettings),
    ("tracing", "MESH_TRACE_", TracingConfig),
)

_COMPOSE = "compose"
_INTERNAL = "internal"

#: The variables that are not settings of a running mesh, each with who reads it.
OTHER: tuple[Declared, ...] = (
    Declared("avro", "MESH_AVRO_DECODER", "str", "compiled",
             "fastavro turns the compiled Avro decoder off (to compare, or to rule it out); "
             "read by shared/avro/compiled.py"),
    Declared("images", "MESH_IMAGE_TAG", "str", "local",
             "tag of the images `make images` builds and the compose mesh and "
             "`mesh deploy --backend docker` run"),
    Declared(_COMPOSE, "MESH_SERVICE_HOST", "str", "127.0.0.1",
             "where the compose mesh's containers reach each other (infra/compose/.env)"),
    Declared(_COMPOSE, "MESH_KAFKA_PORT", "int", "29092",
             "the compose mesh's broker port on the host"),
    Declared(_COMPOSE, "MESH_KAFKA_CONTROLLER_PORT", "int", "29093",
             "the compose mesh's KRaft controller port"),
    Declared(_COMPOSE, "MESH_KAFKA_HEAP", "str", "512m", "the compose mesh broker's JVM heap"),
    Declared(_COMPOSE, "MESH_KAFKA_2_PORT", "int", "29094",
             "the compose cluster's node 2 broker port (`mesh compose up --brokers 3`)"),
    Declared(_COMPOSE, "MESH_KAFKA_2_CONTROLLER_PORT", "int", "29095",
             "the compose cluster's node 2 KRaft controller port"),
    Declared(_COMPOSE, "MESH_KAFKA_3_PORT", "int", "29096",
             "the compose cluster's node 3 broker port"),
    Declared(_COMPOSE, "MESH_KAFKA_3_CONTROLLER_PORT", "int", "29097",
             "the compose cluster's node 3 KRaft controller port"),
    Declared(_COMPOSE, "MESH_KAFKA_CLUSTER_ID", "str", "PswSDm1aTi--M_2XiWLmUQ",
             "the KRaft cluster id the compose cluster's three nodes are formatted with"),
    Declared(_COMPOSE, "MESH_INFLUX_RPC_PORT", "int", "28088",
             "the compose mesh InfluxDB's backup (RPC) port"),
    Declared(_COMPOSE, "MESH_OTLP_PORT", "int", "24318",
             "the compose mesh trace backend's OTLP/HTTP port"),
    Declared(_COMPOSE, "MESH_TRACE_UI_PORT", "int", "26686",
             "the compose mesh trace backend's UI and query API port"),
    Declared(_COMPOSE, "MESH_TRACE_HOST", "str", "127.0.0.1",
             "the interface the trace backend's container listens on (0.0.0.0 in the bridge "
             "variant)"),
    Declared(_COMPOSE, "MESH_WEBHOOK_PORT", "int", "28787",
             "the compose mesh's demo webhook receiver port"),
    Declared(_INTERNAL, "MESH_PROCESS_TAG", "str", "",
             "set by the control plane on every process it starts (<home>/<name>), so it stops "
             "only its own (shared/local_process.py)"),
    Declared(_INTERNAL, "MESH_INSTANCE_STATUS", "Path", "$MESH_HOME/instance.json",
             "set for a detector replica: where it writes the status its health check reads"),
    Declared("bench", "MESH_BENCH_E2E_SCALE", "float", "1",
             "multiplies every run of `python -m bench e2e_latency` (0.2 for a short form)"),
    Declared("bench", "MESH_BENCH_CHECKPOINT_INTERVALS", "str", "30,120,300",
             "the routing checkpoint intervals `python -m bench checkpoint_interval` measures, "
             "whole seconds, comma-separated (`30` for one row)"),
    Declared("bench", "MESH_BENCH_HISTORY_MINUTES", "int", "5",
             "minutes per rate of `python -m bench history_cpu`"),
    Declared("tests", "MESH_DIAMOND_RECORDS", "int", "8000",
             "records of the diamond test's feed (`make equivalence`: 100 000)"),
)  # fmt: skip


def declared() -> list[Declared]:
    """Every variable: the sections' fields in declaration order, then :data:`OTHER`."""
    return [item for item, _, _ in _section_fields()] + list(OTHER)


def effective(env: Mapping[str, str]) -> list[tuple[Declared, str, bool]]:
    """Each variable of :data:`SECTIONS` with the value a process started with ``env`` uses and
    whether ``env`` set it; a value of the wrong type raises the setting's one-line
    ConfigError, as the service would at its start."""
    settings = Settings.from_env(env)
    chosen = {cls: env_values(cls, prefix, env) for _, prefix, cls in SECTIONS}
    rows = []
    for item, cls, f in _section_fields():
        value = (
            getattr(settings, f.name) if cls is Settings else chosen[cls].get(f.name, default_of(f))
        )
        rows.append((item, value_text(value), bool(env.get(item.variable))))
    return rows


def _section_fields() -> list[tuple[Declared, type, dataclasses.Field[object]]]:
    """Each section field as a :class:`Declared`, with its class and dataclass field."""
    return [
        (Declared(section, prefix + doc.name.upper(), doc.type, doc.default, doc.description),
         cls, f)
        for section, prefix, cls in SECTIONS
        for doc, f in field_docs(cls)
    ]  # fmt: skip
