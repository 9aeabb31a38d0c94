"""The broker image's template is the local mesh's broker settings, node by node."""

from __future__ import annotations

import pytest

from hosting.containers.broker_image import cluster_settings, server_template
from hosting.servers.broker import ALONE, Durability, broker_properties

VOTERS = "1@127.0.0.1:29093,2@127.0.0.1:29095,3@127.0.0.1:29097"


def _filled(node: int, voters: str, internal: Durability) -> str:
    """What the image's entrypoint makes of the template (infra/images/kafka-entrypoint.sh)."""
    text = server_template()
    for placeholder, value in {"@LISTEN_HOST@": "127.0.0.1", "@ADVERTISED_HOST@": "127.0.0.1",
                               "@PORT@": "29094", "@CONTROLLER_PORT@": "29095",
                               "@NODE@": str(node), "@VOTERS@": voters,
                               "@REPLICAS@": str(internal.replication),
                               "@MIN_ISR@": str(internal.min_insync)}.items():  # fmt: skip
        text = text.replace(placeholder, value)
    return text + (cluster_settings() if internal.replication > 1 else "")


@pytest.mark.parametrize(
    ("node", "voters", "internal"),
    [(1, "1@127.0.0.1:29095", ALONE), (2, VOTERS, Durability(3, 2))],
)
def test_a_filled_in_template_is_the_local_mesh_s_broker(node, voters, internal) -> None:
    expected = broker_properties("127.0.0.1", 29094, 29095, "/var/lib/kafka", node=node,
                                 voters=voters, internal=internal)  # fmt: skip
    assert _filled(node, voters, internal) == expected


def test_only_a_cluster_s_node_fences_a_lost_peer_fast() -> None:
    assert "broker.session.timeout.ms" not in server_template()
    assert "broker.session.timeout.ms=" in cluster_settings()


def test_only_a_cluster_s_node_snapshots_its_metadata_every_few_minutes() -> None:
    assert "metadata.log.max.snapshot.interval.ms" not in server_template()
    assert "metadata.log.max.snapshot.interval.ms=300000" in cluster_settings()
