"""Topic declarations: the single source of truth for names, partitions and configs.

The YAML file (infra/topics.yaml) is parsed into frozen :class:`TopicSpec` objects and checked up
front (types, known keys, co-partitioned groups), so a bad declaration is a one-line error
before anything touches the cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shared.errors import ConfigError
from shared.kafka.replication import Durability, fitted
from shared.settings import Settings

_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_TOPIC_KEYS = {
    "name", "partitions", "replication_factor", "min_insync_replicas", "config", "copartition"
}  # fmt: skip
_CLEANUP = {"delete", "compact", "compact,delete", "delete,compact"}


@dataclass(frozen=True)
class TopicSpec:
    """One declared topic."""

    name: str
    partitions: int
    replication_factor: int = 1
    config: dict[str, str] = field(default_factory=dict)
    copartition: str | None = None
    #: declared; what a cluster gets follows its size (:mod:`shared.kafka.replication`)
    min_insync_replicas: int = 1

    @property
    def durability(self) -> Durability:
        return Durability(self.replication_factor, self.min_insync_replicas)

    def on_cluster(self, brokers: int) -> TopicSpec:
        """This topic as a cluster of ``brokers`` can hold it: replication capped at the
        brokers, ``min.insync.replicas`` one below it (:func:`shared.kafka.replication.fitted`)."""
        durability = fitted(self.durability, brokers)
        config = {**self.config, "min.insync.replicas": str(durability.min_insync)}
        return replace(self, replication_factor=durability.replication, config=config)

    @property
    def compacted(self) -> bool:
        return "compact" in self.config.get("cleanup.policy", "delete")


def load_topics(path: Path) -> list[TopicSpec]:
    """Read and validate a topic declaration file."""
    import yaml

    try:
        document = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"topic declaration {path} not found (set MESH_TOPICS_FILE)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path} is not valid YAML{where}: fix the syntax") from None
    return parse_topics(document, source=str(path))


def parse_topics(document: Any, source: str = "topics") -> list[TopicSpec]:
    """Validate an already-parsed declaration; errors name the topic and the bad key."""
    if not isinstance(document, dict) or not isinstance(document.get("topics"), list):
        raise ConfigError(f"{source}: expected a mapping with a `topics:` list")
    defaults = document.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"{source}: `defaults` must be a mapping")
    specs: list[TopicSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(document["topics"]):
        spec = _parse_entry(entry, defaults, f"{source}: topic #{index + 1}")
        if spec.name in seen:
            raise ConfigError(f"{source}: topic {spec.name} is declared twice")
        seen.add(spec.name)
        specs.append(spec)
    check_copartitioning(specs, source)
    return specs


def _parse_entry(entry: Any, defaults: dict[str, Any], where: str) -> TopicSpec:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping with name and partitions")
    unknown = set(entry) - _TOPIC_KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_TOPIC_KEYS)}"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not _TOPIC_NAME.match(name):
        raise ConfigError(f"{where}: `name` must be a Kafka topic name (letters, digits, . _ -)")
    where = f"{where} ({name})"
    partitions = entry.get("partitions")
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise ConfigError(f"{where}: `partitions` must be a positive integer")
    replication = entry.get("replication_factor", defaults.get("replication_factor", 1))
    if not isinstance(replication, int) or isinstance(replication, bool) or replication < 1:
        raise ConfigError(f"{where}: `replication_factor` must be a positive integer")
    min_insync = entry.get("min_insync_replicas", defaults.get("min_insync_replicas", 1))
    if not isinstance(min_insync, int) or isinstance(min_insync, bool) or min_insync < 1:
        raise ConfigError(f"{where}: `min_insync_replicas` must be a positive integer")
    if min_insync > replication:
        raise ConfigError(
            f"{where}: `min_insync_replicas` ({min_insync}) is above `replication_factor` "
            f"({replication}): no write could succeed"
        )
    config = entry.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: `config` must be a mapping of Kafka topic configs")
    config = {str(k): str(v) for k, v in config.items()}
    if "min.insync.replicas" in config:
        raise ConfigError(f"{where}: declare `min_insync_replicas` beside `replication_factor`, "
                          "not in `config` (it follows the cluster's size)")  # fmt: skip
    if config.get("cleanup.policy", "delete") not in _CLEANUP:
        raise ConfigError(f"{where}: cleanup.policy must be one of {sorted(_CLEANUP)}")
    copartition = entry.get("copartition")
    if copartition is not None and not isinstance(copartition, str):
        raise ConfigError(f"{where}: `copartition` must be a group name")
    return TopicSpec(name, partitions, replication, config, copartition, min_insync)


def check_copartitioning(specs: list[TopicSpec], source: str = "topics") -> None:
    """Topics of one co-partition group must agree on their partition count."""
    groups: dict[str, list[TopicSpec]] = {}
    for spec in specs:
        if spec.copartition:
            groups.setdefault(spec.copartition, []).append(spec)
    for group, members in groups.items():
        counts = {m.partitions for m in members}
        if len(counts) > 1:
            detail = ", ".join(f"{m.name}={m.partitions}" for m in members)
            raise ConfigError(
                f"{source}: co-partitioned group {group!r} needs one partition count ({detail})"
            )


def with_prefix(specs: list[TopicSpec], prefix: str) -> list[TopicSpec]:
    """The same declaration under other names (tests use this to get private topics)."""
    return [replace(spec, name=f"{prefix}{spec.name}") for spec in specs]


def declared_topics(settings: Settings) -> list[TopicSpec]:
    """The mesh's declaration as this configuration names it: MESH_TOPICS_FILE under
    MESH_TOPIC_PREFIX (private meshes on a shared cluster, as the tests and benchmarks run)."""
    return with_prefix(load_topics(settings.topics_file), settings.topic_prefix)
