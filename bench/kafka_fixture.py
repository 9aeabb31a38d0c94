"""The broker a benchmark run uses: MESH_BOOTSTRAP_SERVERS, or a private one it starts and stops."""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from hosting.servers.broker import LocalBroker
from shared.errors import MeshError
from shared.jar_cache import bundle, fetch
from shared.kafka.served import wait_until_served
from shared.settings import Settings


@contextlib.contextmanager
def bench_cluster(settings: Settings) -> Iterator[Settings]:
    """Settings pointing at a cluster for the benchmarks; a private broker is removed after."""
    if settings.uses_external_kafka:
        yield settings
        return
    fetch(bundle("kafka"), settings)
    with tempfile.TemporaryDirectory(prefix="mesh-bench-") as home:
        private = replace(settings, home=Path(home), broker_port=0)
        broker = LocalBroker(private)
        info, _ = broker.ensure_started()
        try:
            yield replace(private, bootstrap_servers=info.bootstrap)
        finally:
            broker.stop()


def create_topic(
    settings: Settings, prefix: str, partitions: int, *, name: str | None = None
) -> str:
    """A fresh topic for one scenario (uuid-suffixed, so reruns never mix data)."""

    name = name or f"bench.{prefix}.{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result()
    unserved = wait_until_served(admin, [name])
    if unserved:
        raise MeshError(f"benchmark topic {name} is not served after 30 s: {', '.join(unserved)}")
    return name
