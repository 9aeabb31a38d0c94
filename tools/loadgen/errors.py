"""Errors of the load generator; each message says what to change."""

from shared.errors import ConfigError, MeshError


class PopulationTooSmallError(ConfigError):
    """The population cannot carry the requested traffic without accidental fraud patterns."""


class MissingTopicsError(MeshError):
    """The topics to produce to do not exist (and the run would otherwise wait for minutes)."""


class BrokerUnreachableError(MeshError):
    """Kafka did not answer a metadata request in time."""


__all__ = ["BrokerUnreachableError", "MissingTopicsError", "PopulationTooSmallError"]
