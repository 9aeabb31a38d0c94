"""What `make soak` reads every five minutes, read here from the suite's broker and a real process.

The soak itself runs an hour (not in `make test`); its verdicts are unit tested
(tests/unit/chaos/test_soak_report.py). This checks that its readings are right: a process's
memory counts its children, a group's lag counts only the partitions it committed, and ingest's
backlog is raw records not yet routed.
"""

import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from chaos.soak_samples import ingest_backlog, lag_by_group, memory_by_process
from shared.local_process import LocalProcess
from shared.process_usage import parent_pid, process_usage
from shared.topic_names import TopicNames

#: A process that starts a child (as a service starts its JVM) and both wait.
PARENT = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


def _send(bootstrap, topic, count):
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, b"x", str(i).encode())
    assert producer.flush(30) == 0


def test_backlog_and_lag_count_what_is_not_routed_or_committed(kafka_bootstrap, create_topics,
                                                               unique_name):  # fmt: skip
    names = TopicNames(unique_name("soak") + ".")
    create_topics([names.raw("transactions"), names.raw("logins"), names.records("transactions"),
                   names.records("logins"), names.invalid])  # fmt: skip
    _send(kafka_bootstrap, names.raw("transactions"), 5)
    _send(kafka_bootstrap, names.raw("logins"), 2)
    _send(kafka_bootstrap, names.records("transactions"), 3)
    _send(kafka_bootstrap, names.invalid, 1)
    assert ingest_backlog(kafka_bootstrap, names) == 3  # 7 raw, 4 routed

    _send(kafka_bootstrap, names.records("logins"), 4)  # another detector's input
    # a detector's group as it runs: a live member that read one record and committed it
    group = names.detector_group("velocity")
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([names.records("transactions")])
        message = None
        deadline = time.monotonic() + 30
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        assert message is not None and message.error() is None
        consumer.commit(message, asynchronous=False)
        # 2 of records.transactions behind; records.logins and records.invalid (never
        # committed by it) are not its lag
        assert lag_by_group(kafka_bootstrap, names)[group] == 2
    finally:
        consumer.close()


def test_a_process_memory_counts_its_children(tmp_path):
    process = LocalProcess("sleeper", tmp_path)
    info, _ = process.start([sys.executable, "-c", PARENT], {})
    try:
        deadline = time.monotonic() + 10
        while len(_family(info.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # until the child runs
        family = _family(info.pid)
        assert len(family) == 2
        memory = memory_by_process(tmp_path)
        assert set(memory) == {"sleeper"}
        both = sum(u.private_bytes for u in map(process_usage, family) if u) / 2**20
        assert memory["sleeper"] == pytest.approx(both, rel=0.2)
    finally:
        process.stop(timeout=10, descendants_s=0)  # the child only sleeps: stop it at once


def _family(pid):
    """``pid`` and its children."""
    return [pid, *(p for p in _all_pids() if parent_pid(p) == pid)]


def _all_pids():
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
