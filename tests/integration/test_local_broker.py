"""The local broker: a real KRaft Kafka started from the jar cache, on a private MESH_HOME."""

import json
import os
import socket
import threading
from dataclasses import replace

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from hosting.servers.broker import LocalBroker
from shared.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
def private_broker(tmp_path):
    settings = replace(Settings.from_env({}), home=tmp_path / "home", broker_port=0)
    broker = LocalBroker(settings)
    yield broker
    broker.stop()


def test_concurrent_starts_launch_one_broker_and_restart_keeps_topics(private_broker):
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(private_broker.ensure_started()))
        for _ in "ab"
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (first, first_started), (second, second_started) = results
    assert first.pid == second.pid
    assert sorted([first_started, second_started]) == [False, True]

    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    admin.create_topics([NewTopic("kept", 3, 1)])["kept"].result()

    stopped = private_broker.stop()
    assert stopped is not None and stopped.pid == first.pid
    with pytest.raises(ProcessLookupError):
        os.kill(first.pid, 0)
    assert private_broker.running() is None

    again, started = private_broker.ensure_started()
    assert started and again.pid != first.pid
    metadata = AdminClient({"bootstrap.servers": again.bootstrap}).list_topics(timeout=10)
    assert len(metadata.topics["kept"].partitions) == 3


def test_stop_leaves_a_foreign_process_alone(private_broker, tmp_path):
    """A stale pid file that points at someone else's process is ignored, not killed."""
    private_broker.dir.mkdir(parents=True)
    private_broker.pid_file.write_text(
        json.dumps({"name": "kafka", "pid": os.getpid(), "started": 0.0, "command": ["java"]})
    )
    assert private_broker.running() is None
    assert private_broker.stop() is None
    assert not private_broker.pid_file.exists()


def test_a_busy_preferred_port_moves_the_broker_to_a_free_one(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        settings = replace(Settings.from_env({}), home=tmp_path / "home", broker_port=taken)
        broker = LocalBroker(settings)
        try:
            info, started = broker.ensure_started()
            assert started and info.port != taken
            assert (
                AdminClient({"bootstrap.servers": info.bootstrap}).list_topics(timeout=10).brokers
            )
        finally:
            broker.stop()
