"""Least privilege, computed: each principal's grants name its inputs, its outputs, its group and
its changelog, and nothing another service owns."""

from __future__ import annotations

from control.security.grants import (
    CREATE,
    GROUP,
    READ,
    TOPIC,
    WRITE,
    Grant,
    detector_grants,
    detector_principal,
    notifier_grants,
)
from shared.topic_names import TopicNames

NAMES = TopicNames("p.")


def test_a_detector_reads_its_inputs_writes_its_outputs_and_owns_its_group_and_changelog() -> None:
    grants = detector_grants(NAMES, "velocity", ["transactions", "logins"])
    assert set(grants) == {
        Grant(TOPIC, "p.records.transactions", READ),
        Grant(TOPIC, "p.records.logins", READ),
        Grant(TOPIC, "p.alerts", WRITE),
        Grant(TOPIC, "p.detectors.dlq", WRITE),
        Grant(TOPIC, "p.metrics", WRITE),
        Grant(TOPIC, "p.detector.velocity.changelog", READ),
        Grant(TOPIC, "p.detector.velocity.changelog", WRITE),
        Grant(TOPIC, "p.detector.velocity.changelog", CREATE),
        Grant(GROUP, "p.detector.velocity", READ),
        # its shadow versions: their own group and state, the shadow alerts
        Grant(TOPIC, "p.alerts.shadow", WRITE),
        Grant(TOPIC, "p.detector.velocity.shadow.changelog", READ),
        Grant(TOPIC, "p.detector.velocity.shadow.changelog", WRITE),
        Grant(TOPIC, "p.detector.velocity.shadow.changelog", CREATE),
        Grant(GROUP, "p.detector.velocity.shadow", READ),
    }
    assert detector_principal(NAMES, "velocity") == "p.detector-velocity"


def test_nothing_is_granted_by_prefix_and_detectors_share_no_input_they_did_not_declare() -> None:
    echo = set(detector_grants(NAMES, "echo", ["transactions"]))
    geo = set(detector_grants(NAMES, "geo", ["logins"]))
    assert not any(g.prefixed for g in echo | geo)
    shared = {g for g in echo & geo}
    assert shared == {
        Grant(TOPIC, t, WRITE)
        for t in ("p.alerts", "p.alerts.shadow", "p.detectors.dlq", "p.metrics")
    }


def test_the_notifier_reads_alerts_and_writes_only_notifications_and_its_own_topics() -> None:
    grants = set(notifier_grants(NAMES))
    assert {g.name for g in grants if g.operation == READ} == {
        "p.alerts", "p.notifier.changelog", "p.notifier"}  # fmt: skip
    assert {g.name for g in grants if g.operation == WRITE} == {
        "p.notifications", "p.notifications.dlq", "p.metrics", "p.notifier.changelog"}  # fmt: skip


def test_ingest_reads_every_raw_topic_and_owns_the_records_family_by_prefix() -> None:
    from control.security.grants import ingest_grants

    grants = set(ingest_grants(NAMES))
    assert Grant(TOPIC, "p.raw.", READ, prefixed=True) in grants
    assert Grant(TOPIC, "p.records.", WRITE, prefixed=True) in grants
    assert Grant(GROUP, "p.ingest", READ, prefixed=True) in grants
    assert {g.name for g in grants if not g.prefixed} == {"p.metrics.windows", "p.metrics"}
    assert not any(g.operation == READ and g.name.startswith("p.records") for g in grants)


def test_the_aggregator_reads_the_metrics_and_writes_only_their_dead_letters_and_its_own() -> None:
    from control.security.grants import aggregator_grants

    grants = set(aggregator_grants(NAMES))
    assert {g.name for g in grants if g.operation == READ and g.resource == TOPIC} == {
        "p.metrics", "p.metrics.windows"}  # fmt: skip
    assert {g.name for g in grants if g.operation == WRITE} == {"p.metrics.dlq", "p.metrics"}


def test_the_history_only_reads_the_records_family_and_the_alerts() -> None:
    from control.security.grants import history_grants

    grants = set(history_grants(NAMES))
    assert grants == {
        Grant(TOPIC, "p.records.", READ, prefixed=True), Grant(TOPIC, "p.alerts", READ),
        Grant(GROUP, "p.history", READ, prefixed=True),
    }  # fmt: skip
