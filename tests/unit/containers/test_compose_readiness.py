"""What `mesh compose up` waits for: the compose file's detector services, read as the probe of
`mesh up` reads deployed detectors, on the compose mesh's broker and prefix."""

from __future__ import annotations

import yaml

from control.compose_readiness import compose_readers, compose_settings
from hosting.containers.compose import COMPOSE_DIR, COMPOSE_FILE, ComposeMesh, read_env_file
from shared.settings import Settings
from shared.topic_names import TopicNames


def test_every_detector_service_is_a_reader_in_its_group_on_its_inputs() -> None:
    settings = Settings(topic_prefix="p.")
    readers = compose_readers(yaml.safe_load(COMPOSE_FILE.read_text()), settings)
    names = TopicNames.of(settings)
    assert [r.name for r in readers] == ["large_amount", "new_country", "velocity"]
    for reader in readers:
        assert reader.group == names.detector_group(reader.name)
        assert reader.topics == tuple(names.records(t) for t in reader.inputs)
    assert {r.name: r.inputs for r in readers}["velocity"] == ("transactions",)


def test_labels_as_a_list_count_too_and_other_services_do_not() -> None:
    config = {"services": {
        "one": {"labels": ["mesh.role=detector"], "command": ["python", "detectors/velocity"]},
        "ingest": {"labels": {"mesh.role": "ingest"}, "command": ["python", "-m", "x"]},
    }}  # fmt: skip
    assert [r.name for r in compose_readers(config, Settings())] == ["velocity"]


def test_the_probe_goes_to_the_compose_brokers_port_and_prefix() -> None:
    values = {**read_env_file(COMPOSE_DIR / ".env"), "MESH_KAFKA_PORT": "40001",
              "MESH_TOPIC_PREFIX": "c."}  # fmt: skip
    bootstrap = ComposeMesh(environ=values).bootstrap
    target = compose_settings(Settings(bootstrap_servers="127.0.0.1:9092"), values, bootstrap)
    assert (target.bootstrap_servers, target.topic_prefix) == ("127.0.0.1:40001", "c.")
