"""Everything that talks to Kafka: client configuration, the local broker, topic declarations."""

from shared.kafka.config import admin_config, consumer_config, producer_config, resolve_bootstrap

__all__ = ["admin_config", "consumer_config", "producer_config", "resolve_bootstrap"]
