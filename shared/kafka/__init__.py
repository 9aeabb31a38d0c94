"""Everything that talks to Kafka: client configuration, topic declarations, inspection (the local
broker itself is started by the control plane, :mod:`hosting.servers.broker`)."""

from shared.kafka.config import admin_config, consumer_config, producer_config

__all__ = ["admin_config", "consumer_config", "producer_config"]
