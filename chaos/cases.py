"""The suite's cases by name, in the order `make chaos` runs them (issue 19's numbering in the
comments). Each is ``case(settings, work, short) -> CaseResult`` on the broker ``settings`` name
(broker_kill and secure_mesh start a broker of their own, the cluster cases a whole
mesh on a 3-node cluster of its own: a fault, or security, must not
hit the others; the metrics cases start an InfluxDB of their own)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chaos import (
    aggregator_faults,
    broker_faults,
    cluster_faults,
    detector_errors,
    detector_faults,
    disk_faults,
    graceful,
    ingest_faults,
    retention,
    security,
    topic_faults,
)
from chaos.report import CaseResult
from shared.settings import Settings

Case = Callable[[Settings, Path, bool], CaseResult]

CASES: dict[str, Case] = {
    "detector_kill": detector_faults.detector_kill,  # 1
    "detector_kill_cycles": detector_faults.detector_kill_cycles,  # 2
    "graceful_rebalance": graceful.graceful_rebalance,  # 3
    "broker_kill": broker_faults.broker_kill,  # 4
    "ingest_kill_micro_batch": ingest_faults.ingest_kill_micro_batch,  # 5
    "ingest_kill_real_time": ingest_faults.ingest_kill_real_time,  # 5
    "retention_loss": retention.retention_loss,  # 6
    "topic_recreated": topic_faults.topic_recreated,  # 7
    "poison_pills": detector_errors.poison_pills,  # 8
    "throwing_detector": detector_errors.throwing_detector,  # 9
    "metrics_compacted": aggregator_faults.metrics_compacted,  # 10
    "aggregator_kill": aggregator_faults.aggregator_kill,  # 11
    "home_unwritable": disk_faults.home_unwritable,  # 13
    "secure_mesh": security.secure_mesh,  # 14
    "detector_restart_in_place": detector_faults.detector_restart_in_place,  # 15 (issue 34)
    "cluster_broker_kill": cluster_faults.cluster_broker_kill,  # 16 (issue 48)
    "cluster_broker_hang": cluster_faults.cluster_broker_hang,  # 17 (issue 48)
    "cluster_controller_kill": cluster_faults.cluster_controller_kill,  # 18 (issue 48)
    "cluster_rolling_restart": cluster_faults.cluster_rolling_restart,  # 19 (issue 48)
    "cluster_leaderless_alerts": cluster_faults.cluster_leaderless_alerts,  # 20 (issue 48)
    "cluster_leaderless_notifications": cluster_faults.cluster_leaderless_notifications,  # 21
    "cluster_leaderless_raw": cluster_faults.cluster_leaderless_raw,  # 22 (issue 48)
}

#: Cases whose short form another case's covers, left out of `make test` (`make chaos` runs them).
COVERED_IN_SHORT = {
    "detector_restart_in_place": (
        "tests/integration/test_static_restart.py SIGKILLs a replica its real supervisor starts "
        "again under its name and checks every record alerted and no rebalance"
    ),
    "metrics_compacted": "aggregator_kill compacts its metrics topic and rebuilds too",
    "cluster_broker_hang": (
        "cluster_broker_kill's short form hangs the busiest node for 30 s on its mesh first"
    ),
    "cluster_controller_kill": (
        "cluster_broker_kill's short form SIGKILLs the active controller on its mesh (and starts "
        "it again, as its last fault needs two nodes)"
    ),
    "cluster_rolling_restart": (
        "cluster_broker_kill's short form brings a killed node back under load and waits until "
        "it is in every ISR; test_kafka_cluster stops a node gracefully and starts it again"
    ),
    "cluster_leaderless_alerts": (
        "tests/integration/test_kafka_cluster.py stops the node that alone holds two alerts "
        "partitions under a real detector and checks that only their input partitions are held "
        "back, the others alerted and committed, the process alive, and every alert raised once "
        "the node is back"
    ),
    "cluster_leaderless_notifications": (
        "tests/integration/test_kafka_cluster.py stops the node that alone holds a notifications "
        "partition under a real notifier and checks that only the alerts partitions mapped to it "
        "are held back, the others delivered to a real webhook, the process alive, and every "
        "alert delivered exactly once after the node is back"
    ),
    "cluster_leaderless_raw": (
        "tests/integration/test_kafka_cluster.py starts the real ingest job with the node that "
        "alone holds a raw partition stopped and checks that routing holds only that partition, "
        "routes the others, never restarts, and routes the held one once the node is back, "
        "nothing twice but what a handover's mark allows"
    ),
    "ingest_kill_real_time": (
        "cluster_broker_kill's short form SIGKILLs the real-time ingest job under load on its "
        "whole mesh and holds the restart to the same exact bound (chaos/replay_scope.py: only "
        "what it routed beyond its committed checkpoint, once), every acknowledged raw record "
        "routed, the supervisor's restart checked; home_unwritable's short form checks window "
        "counts exact across its job's death"
    ),
    "ingest_kill_micro_batch": (
        "home_unwritable's short form kills the same micro-batch job mid-run (its disk fills "
        "under a checkpoint write) and checks the same: the supervisor restarts it on its "
        "checkpoint, every raw record routed, window counts exact"
    ),
}
