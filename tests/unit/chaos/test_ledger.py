"""The ledger fails on each way a person could be told wrong: a planted fraud never delivered,
delivered again after the notifier had recorded it delivered, or under two alert ids; repeats of
a delivery still in flight (not recorded yet: the notifier killed, a timed-out attempt) pass,
counted."""

from chaos.ledger import ledger

PLANTED = {("velocity", "txn_1", 1000), ("large_amount", "txn_2", 2000)}


def _alert(detector, record, event_time, severity):
    return {"detector": detector, "source_record_id": record, "event_time": event_time,
            "severity": severity, "customer_id": "cus_1"}  # fmt: skip


ALERTS = {"a1": _alert("velocity", "txn_1", 1000, "HIGH"),
          "a2": _alert("large_amount", "txn_2", 2000, "MEDIUM")}  # fmt: skip


def _audit(alert_id, at_ms):
    return {"alert_id": alert_id, "delivered_ms": at_ms, "alert": ALERTS[alert_id]}


def _webhook(alert_id, at_ms, repeat=False):
    alert = ALERTS[alert_id]
    return {"alert_id": alert_id, "at_ms": at_ms, "detector": alert["detector"],
            "source_record_id": alert["source_record_id"], "event_time": alert["event_time"],
            **({"repeat": True} if repeat else {})}  # fmt: skip


def _route(alert):
    """The shipped rules: HIGH to the webhook and the audit log, the rest to the audit log."""
    return ["fraud-team", "audit-log"] if alert["severity"] == "HIGH" else ["audit-log"]


def _judge(audit, webhook, recorded=None):
    channels = {"audit-log": audit, "fraud-team": webhook}
    return ledger(PLANTED, audit, channels, _route, recorded or {})


def test_every_planted_fraud_once_on_every_channel_it_is_routed_to_passes_with_a_table():
    book = _judge([_audit("a1", 5000), _audit("a2", 6000)], [_webhook("a1", 5001)])
    assert book.failures == []
    assert book.table() == [
        "planted frauds, hop          expected  reached  missing  extra",
        "alerted (in the audit log)          2        2        0  -",
        "audit-log                           2        2        0  -",
        "fraud-team                          1        1        0  -",
    ]


def test_a_repeat_of_a_delivery_in_flight_when_the_notifier_died_passes_counted():
    # delivered at 5 000, the notifier killed before it wrote DELIVERED; its restart sent it
    # again at 20 000 and recorded it at 20 005
    audit = [_audit("a1", 5000), _audit("a2", 6000)]
    webhook = [_webhook("a1", 5000), _webhook("a1", 20000, repeat=True)]
    book = _judge(audit, webhook, {"a1/fraud-team": 20005.0, "a1/audit-log": 5001.0})
    assert book.failures == []
    assert book.hops[2].line().endswith("1 repeated (1 in flight)")


def test_a_repeat_after_the_delivery_was_recorded_fails_a_person_was_told_twice():
    # a book that forgot its finished deliveries: a replayed alert sent again, long after
    audit = [_audit("a1", 5000), _audit("a2", 4000), _audit("a2", 40000)]
    webhook = [_webhook("a1", 5000), _webhook("a1", 90000, repeat=True)]
    book = _judge(audit, webhook, {"a1/fraud-team": 5002.0, "a2/audit-log": 4001.0})
    assert book.failures == [
        "audit-log: 1 deliveries repeated after the notifier had recorded them delivered (e.g. "
        "a2): a person was told twice",
        "fraud-team: 1 deliveries repeated after the notifier had recorded them delivered (e.g. "
        "a1): a person was told twice",
    ]


def test_a_planted_fraud_routed_to_the_webhook_and_never_delivered_there_fails():
    book = _judge([_audit("a1", 5000), _audit("a2", 6000)], [])
    assert book.failures == [
        "fraud-team: 1 of 1 planted frauds routed to it never delivered "
        "(e.g. ('velocity', 'txn_1', 1000))"
    ]
    assert book.hops[2].missing == 1


def test_a_fraud_never_alerted_or_alerted_under_two_ids_fails():
    ALERTS["a3"] = ALERTS["a1"]  # the same fraud under another id: its alert id is not stable
    try:
        book = _judge([_audit("a1", 5000), _audit("a3", 5100)], [_webhook("a1", 5000)])
    finally:
        del ALERTS["a3"]
    assert book.failures == [
        "1 planted frauds alerted under more than one alert id (e.g. ('velocity', 'txn_1', "
        "1000): ['a1', 'a3'])",
        "audit-log: 1 planted frauds delivered under two keys (e.g. ('velocity', 'txn_1', 1000))",
        "1 of 2 planted frauds never alerted to a person (e.g. ('large_amount', 'txn_2', 2000))",
    ]
